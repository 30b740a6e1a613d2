"""The MAPS chat: AG2 behind one module and its model-client adapter, the Manager's pure flow and
verdict rules, each step's inputs, the chat and its agents, a person in the chat, the run
folder's transcript, and one solve.
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._chat import ChatOutcome as ChatOutcome, MapsChat as MapsChat, Observer as Observer, Observers as Observers
    from ._flow import (FlowSettings as FlowSettings, calls_left as calls_left, passes as passes,
                        sent_parts as sent_parts, weakest_step as weakest_step)
    from ._human import HumanDecision as HumanDecision, HumanState as HumanState, OnHumanError as OnHumanError
    from ._human_desk import HumanDesk as HumanDesk
    from ._options import SolveOptions as SolveOptions
    from ._role_inputs import (format_options as format_options, interleave_images as interleave_images,
                               withheld_image_notes as withheld_image_notes)
    from ._solving import (SolveResult as SolveResult, Team as Team, assemble_team as assemble_team,
                           configured_chat_settings as configured_chat_settings, solve_problem as solve_problem)
    from ._time import (ASSUMED_TOKENS_PER_S as ASSUMED_TOKENS_PER_S,
                        EMBEDDED_SECONDS_PER_CALL as EMBEDDED_SECONDS_PER_CALL, call_seconds as call_seconds,
                        duration as duration, embedded as embedded, expected_time as expected_time,
                        one_at_a_time as one_at_a_time)
    from ._transcript import (RunWriter as RunWriter, new_run_id as new_run_id,
                              request_for_transcript as request_for_transcript, utc_now as utc_now)
    from ._verdict import extract_json_object as extract_json_object, value_text as value_text

__getattr__, __dir__ = lazy_exports(globals())
