"""AG2, imported without the optional packages a MAPS chat never uses.

`import autogen` (AG2 0.14) imports, each under AG2's own optional-import guard, the `openai`
SDK (for AG2's OpenAI client, in `autogen.oai`) and `matplotlib.pyplot` with `networkx` (for
drawing a group chat's speaker graph, in `autogen.graph_utils`) whenever they are installed: the
`dev` and `report` extras install them, and importing them took ~1.6 s of every `maps solve` and
`maps eval` before its first request. MAPS makes every model call through its own client
(`llm.MapsModelClient`) and draws nothing with AG2, so while AG2 is imported those packages are
marked absent (a `None` entry in `sys.modules`, Python's documented way to make an import fail);
AG2 then proceeds exactly as on an install without them, and once it is imported they are
unmarked, so the rest of the process (`maps report`'s figures, the perf scripts' SDK comparison)
imports them as usual. A package already imported is left alone (hiding it saves nothing).

This is the one module that imports AG2: every other module takes AG2's classes from here, and
`__all__` lists exactly the AG2 symbols MAPS uses (tests/orchestration/test_ag2_surface.py holds the list, and
the AG2 methods the chat calls on them; docs/development.md says what moving off AG2 Classic
would take).
"""

from __future__ import annotations

import logging
import sys

#: Top-level packages AG2 imports when they are installed that no MAPS chat uses.
UNUSED_BY_MAPS = ("openai", "matplotlib", "networkx")


def _mark_absent(names: tuple[str, ...]) -> list[str]:
    """Mark the packages of `names` not yet imported as absent; returns those marked."""
    marked = [name for name in names if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None  # type: ignore[assignment]  # Python's "not importable" mark
    return marked


def _unmark(names: list[str]) -> None:
    """Undo `_mark_absent` (a package some other thread imported meanwhile is left alone)."""
    for name in names:
        if name in sys.modules and sys.modules[name] is None:
            del sys.modules[name]


_marked = _mark_absent(UNUSED_BY_MAPS) if "autogen" not in sys.modules else []
try:
    from autogen import AssistantAgent, ConversableAgent, GroupChat, GroupChatManager, UserProxyAgent
    from autogen.io import IOStream
finally:
    _unmark(_marked)

# AG2 announces at INFO level that our custom model client awaits registration; it always is.
logging.getLogger("autogen.oai.client").setLevel(logging.WARNING)

#: The AG2 symbols MAPS uses, and only those.
__all__ = ["AssistantAgent", "ConversableAgent", "GroupChat", "GroupChatManager", "IOStream", "UserProxyAgent"]
