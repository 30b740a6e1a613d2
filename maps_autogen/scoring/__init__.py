"""Scoring answers: the one accuracy tally, `maps score`, and the benchmarks (registry, shared
rules, one package per benchmark with its task and official-conformant scorer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_names

if TYPE_CHECKING:
    from ._score import RULES as RULES
    from ._score import ScoreOptions as ScoreOptions
    from ._score import ScoreReport as ScoreReport
    from ._score import render_summary as render_summary
    from ._score import resolve_scorer as resolve_scorer
    from ._score import score_file as score_file
    from ._score import score_record as score_record
    from ._tally import Tally as Tally
    from ._tally import first_decision as first_decision
    from ._tally import tally_rows as tally_rows

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'RULES': '_score',
    'ScoreOptions': '_score',
    'ScoreReport': '_score',
    'Tally': '_tally',
    'first_decision': '_tally',
    'render_summary': '_score',
    'resolve_scorer': '_score',
    'score_file': '_score',
    'score_record': '_score',
    'tally_rows': '_tally',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
