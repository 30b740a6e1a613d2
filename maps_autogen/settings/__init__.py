"""What a run is told to do: agents.yaml and OAI_CONFIG_LIST files, the team (its steps and roles),
the prompt files, which endpoint and model each step talks to, and the built-in defaults
(package data in defaults/).
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._compared import (FIELD_NOT_COMPARED as FIELD_NOT_COMPARED, endpoint_compared as endpoint_compared,
                            sections_compared as sections_compared, unrecorded_fields as unrecorded_fields)
    from ._config import (AppConfig as AppConfig, HumanWhen as HumanWhen, ImagesConfig as ImagesConfig,
                          LimitsConfig as LimitsConfig, LoadedConfig as LoadedConfig, LocalEndpoint as LocalEndpoint,
                          OpenAIEndpoint as OpenAIEndpoint, configured_secrets as configured_secrets,
                          defaults_dir as defaults_dir, load_config as load_config)
    from ._dotenv import apply_dotenv as apply_dotenv, forget_dotenv as forget_dotenv, load_dotenv as load_dotenv
    from ._endpoints import (EMBEDDED_MODEL_LABEL as EMBEDDED_MODEL_LABEL, Resolution as Resolution,
                             ResolvedModel as ResolvedModel, embedded_team_setting as embedded_team_setting,
                             max_tokens_key as max_tokens_key, resolve_models as resolve_models,
                             step_lines as step_lines)
    from ._options import (Declared as Declared, Options as Options, SettingsOptions as SettingsOptions, Spec as Spec,
                           argument as argument, bounds as bounds, option as option, takes as takes)
    from ._overrides import render_effective as render_effective, with_overrides as with_overrides
    from ._prompts import PromptSet as PromptSet, load_prompts as load_prompts, render as render
    from ._roles import (MANAGER_NAME as MANAGER_NAME, USER_PROXY_NAME as USER_PROXY_NAME,
                         CriticVerdict as CriticVerdict, SolverAnswer as SolverAnswer,
                         answer_with_option as answer_with_option, critic_schema as critic_schema,
                         lettered_option as lettered_option, option_letter as option_letter,
                         review_text_chars as review_text_chars, shown_answer as shown_answer,
                         solver_schema as solver_schema)
    from ._team import (PROBLEM_FIELDS as PROBLEM_FIELDS, REVIEW_PARTS as REVIEW_PARTS,
                        AnswerFallback as AnswerFallback, ChatPlan as ChatPlan, ReviewPart as ReviewPart,
                        StepConfig as StepConfig, TeamConfig as TeamConfig, check_without as check_without,
                        derived_max_rounds as derived_max_rounds, plan_chat as plan_chat, possessive as possessive)
    from ._yaml import read_yaml as read_yaml

__getattr__, __dir__ = lazy_exports(globals())
