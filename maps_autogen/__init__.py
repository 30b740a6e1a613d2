"""maps-autogen: the MAPS multi-agent method for multimodal scientific problems, on AG2.

The Python API (maps_autogen/api/_api.py) is re-exported here lazily: `import maps_autogen` loads
nothing else; the first use of a name imports what it needs. `__version__` is the installed
package's (its metadata; pyproject.toml writes it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from maps_autogen.api import (
        ChatRecord,
        EffectiveConfig,
        EvalOptions,
        EvalOutcome,
        HumanDecision,
        HumanState,
        MapsError,
        MergeOptions,
        MergeOutcome,
        ModelServerOptions,
        Problem,
        Report,
        ReportOptions,
        ScoreOptions,
        ScoreReport,
        ServeOptions,
        SettingsOptions,
        SolveOptions,
        SolveResult,
        ViewOptions,
        ViewServer,
        effective_config,
        evaluate,
        load_problem,
        load_settings,
        merge,
        read_manifest,
        read_results,
        read_run,
        read_summary,
        read_transcript,
        score,
        serve_model,
        serve_view,
        solve,
        write_report,
        write_view,
    )

    __version__: str

__all__ = ["ChatRecord", "EffectiveConfig", "EvalOptions", "EvalOutcome", "HumanDecision", "HumanState", "MapsError",
           "MergeOptions", "MergeOutcome", "ModelServerOptions", "Problem", "Report", "ReportOptions", "ScoreOptions",
           "ScoreReport", "ServeOptions", "SettingsOptions", "SolveOptions", "SolveResult", "ViewOptions", "ViewServer",
           "__version__", "effective_config", "evaluate", "load_problem", "load_settings", "merge", "read_manifest",
           "read_results", "read_run", "read_summary", "read_transcript", "score", "serve_model", "serve_view", "solve",
           "write_report", "write_view"]


def __getattr__(name: str) -> Any:
    """A name of the Python API, imported on first use (PEP 562)."""
    if name == "__version__":
        from maps_autogen._util import package_version

        value: Any = package_version()
    elif name in __all__:
        from maps_autogen.api import _api as api

        value = getattr(api, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
