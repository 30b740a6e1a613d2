"""The Python API: solve, evaluate, Problem and the results they return.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_names

if TYPE_CHECKING:
    from ._api import ChatRecord as ChatRecord
    from ._api import EffectiveConfig as EffectiveConfig
    from ._api import EvalOptions as EvalOptions
    from ._api import EvalOutcome as EvalOutcome
    from ._api import HumanDecision as HumanDecision
    from ._api import HumanState as HumanState
    from ._api import MapsError as MapsError
    from ._api import MergeOptions as MergeOptions
    from ._api import MergeOutcome as MergeOutcome
    from ._api import ModelServerOptions as ModelServerOptions
    from ._api import Problem as Problem
    from ._api import Report as Report
    from ._api import ReportOptions as ReportOptions
    from ._api import ScoreOptions as ScoreOptions
    from ._api import ScoreReport as ScoreReport
    from ._api import ServeOptions as ServeOptions
    from ._api import SettingsOptions as SettingsOptions
    from ._api import SolveOptions as SolveOptions
    from ._api import SolveResult as SolveResult
    from ._api import ViewOptions as ViewOptions
    from ._api import ViewServer as ViewServer
    from ._api import effective_config as effective_config
    from ._api import evaluate as evaluate
    from ._api import load_problem as load_problem
    from ._api import load_settings as load_settings
    from ._api import merge as merge
    from ._api import read_manifest as read_manifest
    from ._api import read_results as read_results
    from ._api import read_run as read_run
    from ._api import read_summary as read_summary
    from ._api import read_transcript as read_transcript
    from ._api import score as score
    from ._api import serve_model as serve_model
    from ._api import serve_view as serve_view
    from ._api import solve as solve
    from ._api import write_report as write_report
    from ._api import write_view as write_view

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'ChatRecord': '_api',
    'EffectiveConfig': '_api',
    'EvalOptions': '_api',
    'EvalOutcome': '_api',
    'HumanDecision': '_api',
    'HumanState': '_api',
    'MapsError': '_api',
    'MergeOptions': '_api',
    'MergeOutcome': '_api',
    'Problem': '_api',
    'Report': '_api',
    'ReportOptions': '_api',
    'ScoreOptions': '_api',
    'ScoreReport': '_api',
    'ModelServerOptions': '_api',
    'ServeOptions': '_api',
    'SettingsOptions': '_api',
    'SolveOptions': '_api',
    'SolveResult': '_api',
    'ViewOptions': '_api',
    'ViewServer': '_api',
    'effective_config': '_api',
    'evaluate': '_api',
    'load_problem': '_api',
    'load_settings': '_api',
    'merge': '_api',
    'read_manifest': '_api',
    'read_results': '_api',
    'read_run': '_api',
    'read_summary': '_api',
    'read_transcript': '_api',
    'score': '_api',
    'serve_model': '_api',
    'serve_view': '_api',
    'solve': '_api',
    'write_report': '_api',
    'write_view': '_api',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
