"""Shared by the tests of tests/orchestration/test_agent_reuse.py and others: second_chat_shape."""

from __future__ import annotations

from typing import Any


def second_chat_shape(team: Any, problem: Any) -> Any:
    """The agent shape of a default chat on `problem`."""
    from maps_autogen.orchestration._chat import MapsChat, Observers, chat_settings

    config = team.loaded.config
    settings = chat_settings(problem, team=team.loaded.team.config,
                             threshold=config.critic.threshold, max_rollbacks=config.critic.max_rollbacks,
                             final_review=config.critic.final_review, max_rounds=config.stop.max_rounds)
    return MapsChat(problem, prompts=team.prompts, backends=team.backends, settings=settings, observer=Observers()).agent_shape()
