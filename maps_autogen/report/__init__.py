"""Reading finished or running runs: `maps report` and its figures, the paper's tables, the
terminal's live view, replies laid out for reading, and `maps view` (view/).
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._live import LiveConsole as LiveConsole, ProgressLines as ProgressLines
    from ._options import ReportOptions as ReportOptions
    from ._report import Report as Report, write_report as write_report
    from ._tracking import require_tracker as require_tracker, track_eval as track_eval

__getattr__, __dir__ = lazy_exports(globals())
