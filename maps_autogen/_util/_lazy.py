"""A package's names imported from its private modules on first use (PEP 562), so importing a
layer package loads nothing until one of its names is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_names(package: str, exports: Mapping[str, str],
               namespace: MutableMapping[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: each name of `exports` (name → the private
    module that defines it) imported from its module when first asked for, and kept in
    `namespace` (the package's globals) from then on."""

    def attribute(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted({*namespace, *exports})

    return attribute, names
