"""maps-autogen: the MAPS multi-agent method for multimodal scientific problems, on AG2.

The Python API (maps_autogen/api.py) is re-exported here lazily: `import maps_autogen` loads
nothing else; the first use of a name imports what it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from maps_autogen.api import (
        ChatRecord,
        EvalOutcome,
        HumanDecision,
        HumanState,
        MapsError,
        Problem,
        SolveResult,
        evaluate,
        load_problem,
        load_settings,
        solve,
    )

__version__ = "0.1.0"

__all__ = ["ChatRecord", "EvalOutcome", "HumanDecision", "HumanState", "MapsError", "Problem", "SolveResult",
           "__version__", "evaluate", "load_problem", "load_settings", "solve"]


def __getattr__(name: str) -> Any:
    """A name of the Python API, imported on first use (PEP 562)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from maps_autogen import api

    value = getattr(api, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
