"""Scoring answers: the one accuracy tally, `maps score`, and the benchmarks (registry, shared
rules, one package per benchmark with its task and official-conformant scorer).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
