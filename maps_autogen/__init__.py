"""maps-autogen: the MAPS multi-agent method for multimodal scientific problems, on AG2.

The Python API (maps_autogen/api/_api.py) is re-exported here lazily: `import maps_autogen` loads
nothing else; the first use of a name imports what it needs. `__version__` is the installed
package's (its metadata; pyproject.toml writes it).
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from maps_autogen._util._version import __version__ as __version__
    from maps_autogen.api._api import (ChatRecord as ChatRecord, EffectiveConfig as EffectiveConfig,
                                       EvalOptions as EvalOptions, EvalOutcome as EvalOutcome,
                                       HumanDecision as HumanDecision, HumanState as HumanState, MapsError as MapsError,
                                       MergeOptions as MergeOptions, MergeOutcome as MergeOutcome,
                                       ModelServerOptions as ModelServerOptions, Problem as Problem, Report as Report,
                                       ReportOptions as ReportOptions, ScoreOptions as ScoreOptions,
                                       ScoreReport as ScoreReport, ServeOptions as ServeOptions,
                                       SettingsOptions as SettingsOptions, SolveOptions as SolveOptions,
                                       SolveResult as SolveResult, ViewOptions as ViewOptions, ViewServer as ViewServer,
                                       effective_config as effective_config, evaluate as evaluate,
                                       load_problem as load_problem, load_settings as load_settings, merge as merge,
                                       read_manifest as read_manifest, read_results as read_results,
                                       read_run as read_run, read_summary as read_summary,
                                       read_transcript as read_transcript, score as score, serve_model as serve_model,
                                       serve_view as serve_view, solve as solve, write_report as write_report,
                                       write_view as write_view)

__getattr__, __dir__ = lazy_exports(globals())
