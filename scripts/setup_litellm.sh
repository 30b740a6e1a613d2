#!/usr/bin/env bash
# The LiteLLM proxy the gateway tests put in front of llama.cpp's server, in its own virtual
# environment (.venv-litellm/): its many pinned dependencies stay out of the project's .venv.
# Safe to run repeatedly; called by `make test` (and so by CI). Pinned below 1.107 (that release
# was compromised); 1.110's [proxy] extra needs a `litellm-proxy` package pip cannot find.
set -euo pipefail
cd "$(dirname "$0")/.."

LITELLM_VERSION="1.106.12"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv-litellm/bin/python ]; then
  "$PYTHON" -m venv .venv-litellm
fi
if ! .venv-litellm/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('litellm') != '$LITELLM_VERSION')" 2>/dev/null; then
  .venv-litellm/bin/python -m pip install --quiet --upgrade pip
  .venv-litellm/bin/python -m pip install --quiet "litellm[proxy]==$LITELLM_VERSION"
fi
