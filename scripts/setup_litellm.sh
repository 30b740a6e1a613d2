#!/usr/bin/env bash
# The LiteLLM proxy the gateway tests put in front of llama.cpp's server, in its own virtual
# environment (.venv-litellm/): its many pinned dependencies stay out of the project's .venv.
# Safe to run repeatedly; called by `make test` (and so by CI). Pinned below 1.107 (that release
# was compromised); 1.110's [proxy] extra needs a `litellm-proxy` package pip cannot find.
set -euo pipefail
cd "$(dirname "$0")/.."

LITELLM_VERSION="1.106.12"
PYTHON="${PYTHON:-python3}"
if .venv-litellm/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('litellm') != '$LITELLM_VERSION')" 2>/dev/null; then
  exit 0  # installed: nothing to say
fi
echo "setup_litellm: installing LiteLLM $LITELLM_VERSION with its proxy into .venv-litellm (its own environment," \
     "about 740 MB on disk, about 45 s) for the gateway tests (tests/e2e/test_real_servers.py); \`maps\` itself never" \
     "needs it" >&2
if [ ! -x .venv-litellm/bin/python ]; then
  "$PYTHON" -m venv .venv-litellm
fi
.venv-litellm/bin/python -m pip install --quiet --upgrade pip
.venv-litellm/bin/python -m pip install --quiet "litellm[proxy]==$LITELLM_VERSION"
