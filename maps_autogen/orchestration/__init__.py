"""The MAPS chat: AG2 behind one module and its model-client adapter, the Manager's pure flow and
verdict rules, each step's inputs, the chat and its agents, a person in the chat, the run
folder's transcript, and one solve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_names

if TYPE_CHECKING:
    from ._chat import ChatOutcome as ChatOutcome
    from ._chat import MapsChat as MapsChat
    from ._chat import Observer as Observer
    from ._chat import Observers as Observers
    from ._flow import FlowSettings as FlowSettings
    from ._flow import calls_left as calls_left
    from ._flow import passes as passes
    from ._flow import sent_parts as sent_parts
    from ._flow import weakest_step as weakest_step
    from ._human import HumanDecision as HumanDecision
    from ._human import HumanState as HumanState
    from ._human import OnHumanError as OnHumanError
    from ._human_desk import HumanDesk as HumanDesk
    from ._role_inputs import format_options as format_options
    from ._role_inputs import interleave_images as interleave_images
    from ._role_inputs import withheld_image_notes as withheld_image_notes
    from ._solving import SolveResult as SolveResult
    from ._solving import Team as Team
    from ._solving import assemble_team as assemble_team
    from ._solving import configured_chat_settings as configured_chat_settings
    from ._solving import solve_problem as solve_problem
    from ._time import ASSUMED_TOKENS_PER_S as ASSUMED_TOKENS_PER_S
    from ._time import EMBEDDED_SECONDS_PER_CALL as EMBEDDED_SECONDS_PER_CALL
    from ._time import call_seconds as call_seconds
    from ._time import duration as duration
    from ._time import embedded as embedded
    from ._time import expected_time as expected_time
    from ._time import one_at_a_time as one_at_a_time
    from ._transcript import RunWriter as RunWriter
    from ._transcript import new_run_id as new_run_id
    from ._transcript import request_for_transcript as request_for_transcript
    from ._transcript import utc_now as utc_now
    from ._verdict import extract_json_object as extract_json_object
    from ._verdict import value_text as value_text

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'calls_left': '_flow',
    'ChatOutcome': '_chat',
    'FlowSettings': '_flow',
    'HumanDecision': '_human',
    'HumanDesk': '_human_desk',
    'HumanState': '_human',
    'MapsChat': '_chat',
    'Observer': '_chat',
    'Observers': '_chat',
    'OnHumanError': '_human',
    'RunWriter': '_transcript',
    'SolveResult': '_solving',
    'Team': '_solving',
    'assemble_team': '_solving',
    'configured_chat_settings': '_solving',
    'expected_time': '_time',
    'call_seconds': '_time',
    'duration': '_time',
    'embedded': '_time',
    'one_at_a_time': '_time',
    'ASSUMED_TOKENS_PER_S': '_time',
    'EMBEDDED_SECONDS_PER_CALL': '_time',
    'extract_json_object': '_verdict',
    'format_options': '_role_inputs',
    'interleave_images': '_role_inputs',
    'new_run_id': '_transcript',
    'passes': '_flow',
    'request_for_transcript': '_transcript',
    'sent_parts': '_flow',
    'solve_problem': '_solving',
    'utc_now': '_transcript',
    'value_text': '_verdict',
    'weakest_step': '_flow',
    'withheld_image_notes': '_role_inputs',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
