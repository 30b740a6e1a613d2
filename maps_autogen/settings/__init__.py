"""What a run is told to do: agents.yaml and OAI_CONFIG_LIST files, the team (its steps and roles),
the prompt files, which endpoint and model each step talks to, and the built-in defaults
(package data in defaults/).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_names

if TYPE_CHECKING:
    from ._compared import FIELD_NOT_COMPARED as FIELD_NOT_COMPARED
    from ._compared import endpoint_compared as endpoint_compared
    from ._compared import sections_compared as sections_compared
    from ._compared import unrecorded_fields as unrecorded_fields
    from ._config import AppConfig as AppConfig
    from ._config import HumanWhen as HumanWhen
    from ._config import ImagesConfig as ImagesConfig
    from ._config import LimitsConfig as LimitsConfig
    from ._config import LoadedConfig as LoadedConfig
    from ._config import LocalEndpoint as LocalEndpoint
    from ._config import OpenAIEndpoint as OpenAIEndpoint
    from ._config import configured_secrets as configured_secrets
    from ._config import defaults_dir as defaults_dir
    from ._config import load_config as load_config
    from ._dotenv import apply_dotenv as apply_dotenv
    from ._dotenv import forget_dotenv as forget_dotenv
    from ._dotenv import load_dotenv as load_dotenv
    from ._endpoints import EMBEDDED_MODEL_LABEL as EMBEDDED_MODEL_LABEL
    from ._endpoints import Resolution as Resolution
    from ._endpoints import ResolvedModel as ResolvedModel
    from ._endpoints import embedded_team_setting as embedded_team_setting
    from ._endpoints import max_tokens_key as max_tokens_key
    from ._endpoints import resolve_models as resolve_models
    from ._endpoints import step_lines as step_lines
    from ._options import Declared as Declared
    from ._options import MergeOptions as MergeOptions
    from ._options import ModelServerOptions as ModelServerOptions
    from ._options import Options as Options
    from ._options import ReportOptions as ReportOptions
    from ._options import ServeOptions as ServeOptions
    from ._options import SettingsOptions as SettingsOptions
    from ._options import SolveOptions as SolveOptions
    from ._options import Spec as Spec
    from ._options import ViewOptions as ViewOptions
    from ._options import argument as argument
    from ._options import option as option
    from ._options import takes as takes
    from ._overrides import render_effective as render_effective
    from ._overrides import with_overrides as with_overrides
    from ._prompts import PromptSet as PromptSet
    from ._prompts import load_prompts as load_prompts
    from ._prompts import render as render
    from ._roles import MANAGER_NAME as MANAGER_NAME
    from ._roles import USER_PROXY_NAME as USER_PROXY_NAME
    from ._roles import CriticVerdict as CriticVerdict
    from ._roles import SolverAnswer as SolverAnswer
    from ._roles import answer_with_option as answer_with_option
    from ._roles import critic_schema as critic_schema
    from ._roles import lettered_option as lettered_option
    from ._roles import option_letter as option_letter
    from ._roles import review_text_chars as review_text_chars
    from ._roles import shown_answer as shown_answer
    from ._roles import solver_schema as solver_schema
    from ._team import PROBLEM_FIELDS as PROBLEM_FIELDS
    from ._team import REVIEW_PARTS as REVIEW_PARTS
    from ._team import AnswerFallback as AnswerFallback
    from ._team import ChatPlan as ChatPlan
    from ._team import ReviewPart as ReviewPart
    from ._team import StepConfig as StepConfig
    from ._team import TeamConfig as TeamConfig
    from ._team import check_without as check_without
    from ._team import derived_max_rounds as derived_max_rounds
    from ._team import plan_chat as plan_chat
    from ._team import possessive as possessive
    from ._yaml import read_yaml as read_yaml

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'AnswerFallback': '_team',
    'AppConfig': '_config',
    'ChatPlan': '_team',
    'CriticVerdict': '_roles',
    'Declared': '_options',
    'EMBEDDED_MODEL_LABEL': '_endpoints',
    'FIELD_NOT_COMPARED': '_compared',
    'HumanWhen': '_config',
    'ImagesConfig': '_config',
    'LimitsConfig': '_config',
    'LoadedConfig': '_config',
    'LocalEndpoint': '_config',
    'MANAGER_NAME': '_roles',
    'MergeOptions': '_options',
    'ModelServerOptions': '_options',
    'OpenAIEndpoint': '_config',
    'Options': '_options',
    'PROBLEM_FIELDS': '_team',
    'PromptSet': '_prompts',
    'REVIEW_PARTS': '_team',
    'ReportOptions': '_options',
    'Resolution': '_endpoints',
    'ResolvedModel': '_endpoints',
    'ReviewPart': '_team',
    'ServeOptions': '_options',
    'SettingsOptions': '_options',
    'SolveOptions': '_options',
    'SolverAnswer': '_roles',
    'Spec': '_options',
    'StepConfig': '_team',
    'TeamConfig': '_team',
    'USER_PROXY_NAME': '_roles',
    'ViewOptions': '_options',
    'answer_with_option': '_roles',
    'apply_dotenv': '_dotenv',
    'argument': '_options',
    'check_without': '_team',
    'configured_secrets': '_config',
    'critic_schema': '_roles',
    'defaults_dir': '_config',
    'derived_max_rounds': '_team',
    'embedded_team_setting': '_endpoints',
    'endpoint_compared': '_compared',
    'forget_dotenv': '_dotenv',
    'max_tokens_key': '_endpoints',
    'lettered_option': '_roles',
    'load_config': '_config',
    'load_dotenv': '_dotenv',
    'load_prompts': '_prompts',
    'option': '_options',
    'option_letter': '_roles',
    'plan_chat': '_team',
    'possessive': '_team',
    'read_yaml': '_yaml',
    'render': '_prompts',
    'render_effective': '_overrides',
    'resolve_models': '_endpoints',
    'review_text_chars': '_roles',
    'sections_compared': '_compared',
    'shown_answer': '_roles',
    'solver_schema': '_roles',
    'step_lines': '_endpoints',
    'takes': '_options',
    'unrecorded_fields': '_compared',
    'with_overrides': '_overrides',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
