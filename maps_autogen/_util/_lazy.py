"""A package's names imported from its private modules on first use (PEP 562), declared once: the
`from ._module import (name as name, ...)` block under the package's `if TYPE_CHECKING:` is what
mypy and a reader see, and what `lazy_exports` reads back (with `ast`, once) to know which module
defines each name. Importing a layer package loads nothing until one of its names is used."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any


def declared_exports(source: str, package: str) -> dict[str, tuple[str, str]]:
    """{exported name: (module, its name there)} for each `from MODULE import name as exported` of
    the `if TYPE_CHECKING:` block of a package's `__init__` source; a relative MODULE is resolved
    against `package`."""
    exports: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom):
                continue
            base = package.split(".")[: len(package.split(".")) - (statement.level - 1)] if statement.level else []
            module = ".".join([*base, *([statement.module] if statement.module else [])])
            for alias in statement.names:
                if alias.asname is not None:  # `name as name`: an explicit re-export (mypy's rule)
                    exports[alias.asname] = (module, alias.name)
    return exports


def lazy_exports(namespace: MutableMapping[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for the package whose globals are `namespace`: `__all__` is the
    names its `if TYPE_CHECKING:` block re-exports, and each of them is read from its module whenever
    it is asked for (the module imported once): never kept in the package, so a name patched in its
    module (`mock.patch("pkg._module.name")`) is what the package gives while the patch lasts, and
    no longer once it is undone."""
    package: str = namespace["__name__"]
    table: dict[str, tuple[str, str]] = {}

    def exports() -> dict[str, tuple[str, str]]:
        if not table:
            table.update(declared_exports(Path(namespace["__file__"]).read_text(encoding="utf-8"), package))
        return table

    def attribute(name: str) -> Any:
        if name == "__all__":
            namespace[name] = sorted(exports())
            return namespace[name]
        if name in exports():
            module, original = exports()[name]
            return getattr(importlib.import_module(module), original)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def names() -> list[str]:
        return sorted({*namespace, *exports()})

    return attribute, names
