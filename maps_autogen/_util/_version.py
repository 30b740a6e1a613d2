"""The package's version, read from its installed metadata: written once, in pyproject.toml."""

from __future__ import annotations

import functools
import importlib.metadata


@functools.cache
def package_version() -> str:
    """The installed package's version, read from its metadata once per process ("unknown"
    when the package runs from a folder it was never installed from)."""
    try:
        return importlib.metadata.version("maps-autogen")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


__version__ = package_version()  # `maps_autogen.__version__`
