"""What an eval records of the environment it ran in: package versions and the git commit."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path


def versions() -> dict[str, str]:
    """The Python version and the versions of the packages a run depends on."""
    versions = {"python": platform.python_version()}
    # the scoring stack (sympy, mpmath, antlr4) decides verdicts: its versions are part of a result
    for package in ("maps-autogen", "autogen", "openai", "datasets", "sympy", "mpmath", "antlr4-python3-runtime",
                    "pydantic"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def git_commit() -> str | None:
    """The commit of the source checkout this runs from (None when not in a git checkout)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        result = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None



__all__ = ["git_commit", "versions"]
