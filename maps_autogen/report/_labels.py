"""Who did what, in words, read from what the records say happened (never recomputed from
scores): who sent a step back (the reviewer, or the person at a pause) and why a chat stopped.
The terminal's live view and the viewer's pages say it alike."""

from __future__ import annotations

from maps_autogen.records import RollbackEvent, StopReason
from maps_autogen.settings import possessive


def title(step: str) -> str:
    """A step's display name (settings/_team.py's rule): the name with a capital."""
    return step[:1].upper() + step[1:]


def sender(event: RollbackEvent) -> str:
    """Who sent the step of `event` back, as the record names them (`sender`): "the person
    (UserProxy)" for the person at a pause, else the reviewer ("the Critic")."""
    return f"the person ({event.sender})" if event.by == "user" else f"the {event.sender}"


def stop_words(reason: StopReason | None, *, reviewer: str | None = None, rollbacks: int = 0,
               max_rollbacks: int | None = None) -> str:
    """Why a chat stopped, in words, from its recorded stop reason, the rollbacks it recorded and
    the rollback budget its flow recorded (`reviewer`: the reviewer's display name)."""
    who = f"the {reviewer}" if reviewer else "the reviewer"
    if reason == "rollback_limit":
        if rollbacks == 0 and max_rollbacks == 0:
            return "the review did not pass, and no rollback is allowed (max_rollbacks 0)"
        budget = f" of {max_rollbacks}" if max_rollbacks is not None else ""
        return f"no rollback was left ({rollbacks}{budget} used) and the work had not passed"
    words = {
        "critic_passed": f"{who} passed every step",
        "critic_unparseable": f"{possessive(who)} review could not be used",
        "max_rounds": "the round limit was reached",
        "error": "an error ended the chat",
        "interrupted": "the run was interrupted",
        "user_stopped": "the person stopped the chat",
        "no_reviewer": "no reviewer ran: nothing was reviewed",
    }
    return words[reason] if reason in words else "–"


__all__ = ["sender", "stop_words", "title"]
