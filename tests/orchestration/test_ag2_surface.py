"""AG2 Classic (`autogen` 0.14, in maintenance mode) stays behind one module, maps_autogen/orchestration/_ag2.py,
and MAPS uses exactly the AG2 surface listed here: these symbols, these methods called on them.
Using more of AG2 (or less) fails this test until the lists here and docs/development.md
("Moving off AG2 Classic") say so: the lists are what a move off AG2 has to replace."""

from __future__ import annotations

import ast
from pathlib import Path

import maps_autogen
from maps_autogen.orchestration import _ag2 as ag2
from tests.helpers.common import REPO

#: The AG2 symbols MAPS imports (maps_autogen/orchestration/_ag2.py's `__all__`).
AG2_SYMBOLS = {"AssistantAgent", "ConversableAgent", "GroupChat", "GroupChatManager", "IOStream", "UserProxyAgent"}
#: The AG2 methods MAPS calls on them (two of them private: `_validate_llm_config`, `_create_client`).
AG2_METHODS = {"_create_client", "_validate_llm_config", "clear_history", "generate_oai_reply", "initiate_chat",
               "register_hook", "register_model_client", "register_reply", "set_default"}

PACKAGE = Path(maps_autogen.__file__).parent


def modules() -> dict[str, ast.Module]:
    return {str(path.relative_to(REPO)): ast.parse(path.read_text()) for path in sorted(PACKAGE.rglob("*.py"))}


def imported_from(tree: ast.Module, *names: str) -> set[str]:
    """The names `tree` imports from any of the modules `names` (or their submodules)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in names:
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module in {f"maps_autogen.orchestration.{n}" for n in names}:
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] in names}
    return found


def test_only_maps_autogen_ag2_imports_ag2() -> None:
    importers = {name for name, tree in modules().items() if imported_from(tree, "autogen")}
    assert importers == {"maps_autogen/orchestration/_ag2.py"}


def test_the_ag2_symbols_are_exactly_these_and_each_is_used() -> None:
    assert set(ag2.__all__) == AG2_SYMBOLS
    assert imported_from(modules()["maps_autogen/orchestration/_ag2.py"], "autogen") == AG2_SYMBOLS
    used = set().union(*(imported_from(tree, "_ag2") & AG2_SYMBOLS for name, tree in modules().items()))
    assert used == AG2_SYMBOLS  # nothing exported that nothing uses


def _ag2_methods() -> set[str]:
    """The functions AG2 defines on the classes we use (not built-in container methods: a call
    such as `list.append` cannot be told from `GroupChat.append` by name)."""
    builtin = set(dir(list)) | set(dir(dict)) | set(dir(str)) | set(dir(object))
    names = set()
    for symbol in AG2_SYMBOLS:
        cls = getattr(ag2, symbol)
        for name in dir(cls):
            member = getattr(cls, name, None)
            if callable(member) and (getattr(member, "__module__", None) or "").startswith("autogen") and name not in builtin:
                names.add(name)
    return names


def test_the_ag2_methods_called_are_exactly_these() -> None:
    methods = _ag2_methods()
    called = set()
    for tree in (tree for tree in modules().values() if imported_from(tree, "_ag2") & AG2_SYMBOLS):
        called |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr in methods}
    assert called == AG2_METHODS


def test_docs_name_every_symbol_and_method_in_the_plan_to_move() -> None:
    text = (REPO / "docs" / "development.md").read_text()
    section = text.split("## Moving off AG2 Classic", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{name}`" in section for name in AG2_SYMBOLS | AG2_METHODS), section
