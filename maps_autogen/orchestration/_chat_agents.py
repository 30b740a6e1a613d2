"""The AG2 agents of a chat's shape: the UserProxy, one AssistantAgent per step and the
GroupChatManager whose speaker selection is the bound chat's (`chat.MapsChat`), built once per
worker thread and reused by its chats; and the IOStream a chat runs under.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from maps_autogen.model import Completion
from maps_autogen.orchestration._ag2 import (
    AssistantAgent,
    ConversableAgent,
    GroupChat,
    GroupChatManager,
    UserProxyAgent,
)
from maps_autogen.orchestration._ag2_client import MapsModelClient
from maps_autogen.settings import MANAGER_NAME, USER_PROXY_NAME

if TYPE_CHECKING:
    from maps_autogen.orchestration._chat import MapsChat


class _SilentStream:
    """AG2 prints every message by default; our own live view does the talking. AG2's human
    input (the UserProxy's `get_human_input`) reads from `input`: the person's answer (`ask`)."""

    def __init__(self, ask: Callable[[], str] | None = None):
        self._ask = ask

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        return None

    def send(self, message: Any) -> None:
        return None

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        if self._ask is None:
            raise RuntimeError("AG2 asked for human input in a chat no person takes part in")
        return self._ask()


@dataclass(frozen=True)
class AgentShape:
    """Everything that shapes a chat's AG2 agents: chats of one shape can share them."""

    user_proxy_system: str
    manager_system: str
    # (step, agent name, system message, model) of each step that runs
    assistants: tuple[tuple[str, str, str, str], ...]
    human: bool
    max_round: int
    team: str  # the team's steps as JSON: chats of different teams never share agents


class ChatAgents:
    """The AG2 agents of one chat shape, built once per worker thread and reused by its chats.

    Building agents costs more than a chat's own work (AG2 constructs an `OpenAIWrapper` per
    agent), so a chat binds itself to a ready set instead. Reuse is safe because
    `initiate_chat(clear_history=True)` clears the group chat's messages, every agent's history
    and reply counters, and all per-problem state lives in the bound `MapsChat`. Every agent is
    `silent`: AG2 then builds no event object for each message it would print (our live view
    does the talking).
    """

    def __init__(self, shape: AgentShape):
        never = lambda message: False  # noqa: E731 - only the Manager's plan ends a chat
        self.chat: MapsChat | None = None
        self.user_proxy = UserProxyAgent(
            USER_PROXY_NAME,
            system_message=shape.user_proxy_system,
            human_input_mode="ALWAYS" if shape.human else "NEVER",
            code_execution_config=False,
            llm_config=False,
            is_termination_msg=never,
            default_auto_reply="",
            silent=True,
        )
        self.assistants: dict[str, AssistantAgent] = {}
        for role, agent_name, system_message, _ in shape.assistants:
            self.assistants[role] = AssistantAgent(
                agent_name,
                system_message=system_message,
                llm_config=False,  # the model client comes below, once every agent exists
                is_termination_msg=never,
                max_consecutive_auto_reply=10_000,
                silent=True,
            )
        groupchat = GroupChat(
            agents=[self.user_proxy, *self.assistants.values()],
            messages=[],
            # Our flow stops the chat; AG2's own bound only backs it up.
            max_round=shape.max_round,
            speaker_selection_method=self._select_speaker,
            allow_repeat_speaker=True,
            send_introductions=False,
        )
        self.manager = GroupChatManager(
            groupchat=groupchat,
            name=MANAGER_NAME,
            system_message=shape.manager_system,
            llm_config=False,
            is_termination_msg=never,
            silent=True,
        )
        for role, _, _, model in shape.assistants:
            self._connect(role, model)

    def _connect(self, role: str, model: str) -> None:
        """Give a step's agent its model client and its request hook. AG2's runtime logger
        (autogen.runtime_logging) records each new agent by serialising its attributes, and those
        of the agents a group chat holds; AG2's model wrapper and our hooks cannot be serialised,
        so they are attached only after every agent (and the Manager) has been recorded."""
        agent = self.assistants[role]
        agent.llm_config = agent._validate_llm_config(
            {"config_list": [{"model": model, "model_client_cls": MapsModelClient.__name__}], "cache_seed": None})
        agent.client = agent._create_client(agent.llm_config)
        # AG2 annotates this parameter as an instance of its ModelClient protocol, but it takes the class.
        agent.register_model_client(MapsModelClient, call=partial(self._call_model, role))  # type: ignore[arg-type]
        agent.register_hook("process_all_messages_before_reply", partial(self._role_view, role))
        # The model call is a step's only reply: AG2's others (termination and human-input checks,
        # tool, function-call and code-execution replies) never apply to a step, and each costs a
        # check of its trigger on every turn (a runtime Protocol isinstance, slow on Python 3.11).
        # A step replies only to the Manager, named by a string trigger (a cheap comparison).
        agent.register_reply(MANAGER_NAME, ConversableAgent.generate_oai_reply, remove_other_reply_funcs=True)

    def forget(self) -> None:
        """Drop the last chat's messages from every agent. `initiate_chat(clear_history=True)`
        clears only the histories with the chat's two ends, so without this the Manager would
        keep every speaker's replies of every chat."""
        for agent in (self.user_proxy, self.manager, *self.assistants.values()):
            agent.clear_history()

    def _bound(self) -> MapsChat:
        if self.chat is None:
            raise RuntimeError("the agents were called with no chat bound to them")
        return self.chat

    def _call_model(self, role: str, messages: list[dict[str, Any]]) -> Completion:
        return self._bound()._call_model(role, messages)

    def _role_view(self, role: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._bound()._role_view(role, history)

    def _select_speaker(self, last_speaker: Any, groupchat: Any) -> Any:
        return self._bound()._select_speaker(self.assistants, self.user_proxy, last_speaker, groupchat)


MAX_AGENT_SHAPES_PER_THREAD = 8
_thread_agents = threading.local()


def agents_for(shape: AgentShape) -> ChatAgents:
    """This thread's agents for `shape`, built on first use (a few shapes are kept per thread:
    with and without images, say; the oldest is dropped beyond that)."""
    kept: dict[AgentShape, ChatAgents] | None = getattr(_thread_agents, "by_shape", None)
    if kept is None:
        kept = _thread_agents.by_shape = {}
    agents = kept.get(shape)
    if agents is None:
        if len(kept) >= MAX_AGENT_SHAPES_PER_THREAD:
            kept.pop(next(iter(kept)))
        agents = kept[shape] = ChatAgents(shape)
    return agents


__all__ = ["MAX_AGENT_SHAPES_PER_THREAD", "AgentShape", "ChatAgents", "agents_for"]
