"""Reading finished or running runs: `maps report` and its figures, the paper's tables, the
terminal's live view, replies laid out for reading, and `maps view` (view/).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_names

if TYPE_CHECKING:
    from ._live import LiveConsole as LiveConsole
    from ._live import ProgressLines as ProgressLines
    from ._report import Report as Report
    from ._report import write_report as write_report

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'LiveConsole': '_live',
    'ProgressLines': '_live',
    'Report': '_report',
    'write_report': '_report',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
