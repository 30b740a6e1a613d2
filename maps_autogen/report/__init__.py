"""Reading finished or running runs: `maps report` and its figures, the paper's tables, the
terminal's live view, replies laid out for reading, and `maps view` (view/).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._live import LiveConsole as LiveConsole
    from ._report import Report as Report
    from ._report import write_report as write_report

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'LiveConsole': '_live',
    'Report': '_report',
    'write_report': '_report',
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """A name of this package, imported from its module on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _EXPORTS[name]
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
