"""Scoring answers: the one accuracy tally and `maps score`, recorded answers scored by a
benchmark's official-conformant rules (`maps_autogen.benchmarks`, a layer below: each benchmark's
task and scorer side by side).
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._score import (RULES as RULES, ScoreOptions as ScoreOptions, ScoreReport as ScoreReport,
                         render_summary as render_summary, resolve_scorer as resolve_scorer, score_file as score_file,
                         score_record as score_record)
    from ._tally import Tally as Tally, first_decision as first_decision, tally_rows as tally_rows

__getattr__, __dir__ = lazy_exports(globals())
