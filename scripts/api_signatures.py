"""Write maps_autogen/api/_signatures.py, the Python API's static types, from the options'
declarations: for each API function that `takes` makes (`maps_autogen.solve`, `evaluate`, ...),
a `typing.Protocol` whose `__call__` overloads are the ways that function is called (its options
as keywords; or an options object as `options=`, or by position, with keywords over it), each
option's name, type and default as its declaration gives them (the same ones `inspect.signature`
shows). tests/api/test_typed_api.py fails when the file and the declarations drift, and runs mypy
on calls with a misspelt keyword. Run: python scripts/api_signatures.py"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import json
import sys
import textwrap
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

MODULE = "maps_autogen.api._api"  # where the API functions are made
TARGET = REPO / "maps_autogen" / "api" / "_signatures.py"
WIDTH = 120  # ruff's line length
P = inspect.Parameter

HEADER = '''"""The Python API's static types, made from the options' declarations: one Protocol per
function `takes` makes, which mypy checks every call of it against.

Each function in api/_api.py carries `@typed(<its name>Function)`. A Protocol's `__call__`
overloads are the ways the function is called: its options as keywords, or an options object (as
`options=`, or by position) with keywords over it; each option's name, type and default are those
its declaration gives (the same `inspect.signature` and `help()` show). At run time the function
takes what these say and checks every value (settings/_options.py).

Written by `python scripts/api_signatures.py`: do not edit it, run the script again
(tests/api/test_typed_api.py fails when this file and the declarations drift).
"""

from __future__ import annotations

'''


def protocol_name(function: str) -> str:
    """`effective_config` → `EffectiveConfigFunction`."""
    return "".join(part.capitalize() for part in function.split("_")) + "Function"


@dataclass(frozen=True)
class Origin:
    """Where a name comes from: `from module import name` (name None: `import module`)."""

    module: str
    name: str | None


def module_names(module: types.ModuleType) -> dict[str, Origin]:
    """Every name `module` binds at its top level (imports, also those under TYPE_CHECKING, and
    its own definitions), with where it comes from."""
    tree = ast.parse(inspect.getsource(module))
    found: dict[str, Origin] = {}
    package = module.__name__.rpartition(".")[0]

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.If):
                visit(node.body)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname is None:  # `import os.path` binds os
                        found[alias.name.split(".")[0]] = Origin(alias.name.split(".")[0], None)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{parent}.{base}" if base else parent
                for alias in node.names:
                    found[alias.asname or alias.name] = Origin(base, alias.name)
            elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                found[node.name] = Origin(module.__name__, node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, Origin(module.__name__, target.id))
    visit(tree.body)
    return found


class Names:
    """The names the generated module uses, each bound to one origin (its imports)."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.known = module_names(module)
        self.bound: dict[str, Origin] = {}

    def bind(self, name: str, origin: Origin) -> bool:
        """Import `name` from `origin`; False when the name is already taken by another."""
        return self.bound.setdefault(name, origin) == origin

    def annotation(self, text: str) -> str:
        """An annotation the API module wrote (a string under `from __future__ import
        annotations`), its names imported as that module imports them."""
        for node in ast.walk(ast.parse(text, mode="eval")):
            if isinstance(node, ast.Name) and not hasattr(builtins, node.id):
                if node.id not in self.known or not self.bind(node.id, self.known[node.id]):
                    raise SystemExit(f"{self.module.__name__}: cannot say where {node.id!r} (in {text!r}) comes from")
        return text

    def type(self, value: Any) -> str:
        """A type the declarations made (`_api_type`), as source."""
        if value is None or value is type(None):
            return "None"
        if isinstance(value, types.UnionType):
            return " | ".join(self.type(arg) for arg in typing.get_args(value))
        origin = typing.get_origin(value)
        if origin is not None:
            return f"{self.type(origin)}[{', '.join(self.type(arg) for arg in typing.get_args(value))}]"
        if not isinstance(value, type):
            raise SystemExit(f"an option's type {value!r} is not a class, a union or a generic")
        if value.__module__ == "builtins":
            return value.__name__
        name = value.__name__
        if getattr(self.module, name, None) is value and name in self.known and self.bind(name, self.known[name]):
            return name  # as the API module imports it
        if self.bind(name, Origin(value.__module__, name)):
            return name
        self.bind(value.__module__, Origin(value.__module__, None))  # a name taken: the module's
        return f"{value.__module__}.{value.__qualname__}"

    def imports(self) -> list[str]:
        """The import lines, sorted as ruff's isort sorts them (standard library first)."""
        plain = sorted({origin.module for origin in self.bound.values() if origin.name is None})
        named: dict[str, set[str]] = {}
        for name, origin in self.bound.items():
            if origin.name is not None:
                named.setdefault(origin.module, set()).add(name if name == origin.name else f"{origin.name} as {name}")
        sections: list[list[str]] = [[], []]
        for module in plain:
            sections[module.startswith("maps_autogen")].append(f"import {module}")
        for module in sorted(named):
            sections[module.startswith("maps_autogen")].append(import_line(module, sorted(named[module], key=by_type)))
        return [line for section in sections if section for line in [*section, ""]][:-1]


def by_type(name: str) -> tuple[bool, bool, str]:
    """isort's order of the names one import brings: constants, classes, then the others."""
    return not name.isupper(), not name[:1].isupper(), name.casefold()


def import_line(module: str, names: list[str]) -> str:
    """`from module import names` as ruff's isort writes it (under `if TYPE_CHECKING:`)."""
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= WIDTH - 4:
        return line
    return "\n".join([f"from {module} import (", *(f"    {name}," for name in names), ")"])


def wrap(opening: str, items: list[str], closing: str, *, indent: int) -> str:
    """`opening` item, item, ... `closing`, its lines at most WIDTH long (indented under the opening)."""
    lead = " " * indent
    line, lines = lead + opening, []
    pad = " " * len(line)
    for index, item in enumerate(items):
        last = index == len(items) - 1
        piece = item + ("" if last else ", ")
        if len(line) + len(piece.rstrip()) + (len(closing) if last else 0) > WIDTH and line.strip():
            lines.append(line.rstrip())
            line = pad
        line += piece
    lines.append(line + closing)
    return "\n".join(lines)


@dataclass(frozen=True)
class ApiFunction:
    """An API function `takes` made, its parameters as its signature sorts them."""

    name: str
    options: type  # the options class
    own_positional: list[P]  # the function's own (a problem)
    declared_positional: list[P]  # declared options it also takes by position (an argument)
    declared_keywords: list[P]  # the other declared options
    own_keywords: list[P]  # the function's own keyword-only ones (callbacks), without `options`
    returns: str


def api_functions(module: types.ModuleType) -> Iterator[ApiFunction]:
    """The functions of the API module's `__all__` that `takes` made (their `options`
    parameter takes an options class)."""
    from maps_autogen.settings import Options

    for name in module.__all__:
        function = getattr(module, name)
        if not inspect.isfunction(function):
            continue
        parameters = inspect.signature(function).parameters
        annotation = parameters["options"].annotation if "options" in parameters else None
        options = next((arg for arg in typing.get_args(annotation) if isinstance(arg, type)), None)
        if options is None or not issubclass(options, Options):
            continue
        declared = {one.name for one in options.declared()}
        positional = [p for p in parameters.values() if p.kind is P.POSITIONAL_OR_KEYWORD]
        keywords = [p for p in parameters.values() if p.kind is P.KEYWORD_ONLY and p.name != "options"]
        yield ApiFunction(name, options, [p for p in positional if p.name not in declared],
                          [p for p in positional if p.name in declared], [p for p in keywords if p.name in declared],
                          [p for p in keywords if p.name not in declared],
                          inspect.signature(function).return_annotation)


def default(value: Any) -> str:
    """A declared default as source (what `inspect.signature` shows)."""
    if isinstance(value, Path):
        return f"Path({json.dumps(str(value))})"
    if isinstance(value, str):
        return json.dumps(value)  # a Python string too, in double quotes
    if isinstance(value, (frozenset, tuple)) and not value:
        return f"{type(value).__name__}()" if isinstance(value, frozenset) else "()"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise SystemExit(f"no source for the default {value!r}")


def parameter(one: P, names: Names, *, optional: bool = False) -> str:
    """`name: type = default` (`optional`: `= ...` where the declaration has no default)."""
    annotation = names.annotation(one.annotation) if isinstance(one.annotation, str) else names.type(one.annotation)
    if one.default is P.empty:
        return f"{one.name}: {annotation}" + (" = ..." if optional else "")
    if isinstance(one.default, Path):
        names.bind("Path", Origin("pathlib", "Path"))
    return f"{one.name}: {annotation} = {default(one.default)}"


def protocol(function: ApiFunction, names: Names) -> str:
    """The Protocol of one API function: three overloads (keywords; `options=` with keywords over
    it; the options object by position with keywords over it)."""
    options = names.type(function.options)
    own = [parameter(p, names) for p in function.own_positional]
    rest = [parameter(p, names) for p in function.declared_keywords + function.own_keywords]
    overloads = [
        [*own, *(parameter(p, names) for p in function.declared_positional), "*", *rest],
        [*own, *(parameter(p, names, optional=True) for p in function.declared_positional), "*",
         f"options: {options}", *rest],
        [*own, f"options: {options}", "/", "*",
         *(parameter(p, names, optional=True) for p in function.declared_positional), *rest],
    ]
    returns = names.annotation(function.returns)
    doc = (f'"""`maps_autogen.{function.name}`: the options of {function.options.__name__} as keywords, or an '
           'options object with keywords over it."""')
    body = [f"class {protocol_name(function.name)}(Protocol):", textwrap.fill(doc, 100, initial_indent="    ",
                                                                               subsequent_indent="    ")]
    for items in overloads:
        body += ["", "    @overload", wrap("def __call__(", ["self", *items], f") -> {returns}: ...", indent=4)]
    return "\n".join(body)


def source(module_name: str = MODULE) -> str:
    """The text of maps_autogen/api/_signatures.py, made from the declarations as they are now
    (those of the API functions of `module_name`)."""
    module = importlib.import_module(module_name)
    names = Names(module)
    functions = list(api_functions(module))
    for function in functions:  # the API module's own names first: they keep their names
        for one in function.own_positional + function.own_keywords:
            names.annotation(one.annotation)
        names.annotation(function.returns)
    classes = [protocol(function, names) for function in functions]
    runtime = ["from typing import TYPE_CHECKING, Protocol, overload"]
    if "Path" in names.bound:  # defaults are evaluated when the class is made
        runtime.insert(0, "from pathlib import Path")
        del names.bound["Path"]
    imports = "\n".join(names.imports()).splitlines()
    lines = [*runtime, "", "if TYPE_CHECKING:", *(f"    {line}" if line else "" for line in imports)]
    if not imports:
        raise SystemExit(f"{module_name}: no API function made by takes")
    exported = sorted(protocol_name(function.name) for function in functions)
    return (HEADER + "\n".join(lines) + "\n\n\n" + "\n\n\n".join(classes) + "\n\n\n"
            + wrap("__all__ = [", [f'"{name}"' for name in exported], "]", indent=0) + "\n")


def main() -> None:
    TARGET.write_text(source(), encoding="utf-8")
    print(f"wrote {TARGET.relative_to(REPO)}")


if __name__ == "__main__":
    main()
