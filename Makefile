.PHONY: setup demo test

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/maps solve --problem examples/lever/problem.yaml

test: setup
	.venv/bin/python -m pytest -q
