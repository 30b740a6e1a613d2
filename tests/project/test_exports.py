"""Each package's public names are declared once, in its `__init__.py`'s import block, and that block
is the whole of the file (in the manner of httpx's test_exported_members).

A lazy package declares `from ._module import (name as name, ...)` under `if TYPE_CHECKING:` (what
mypy and a reader see) and ends with `__getattr__, __dir__ = lazy_exports(globals())`, which reads the
block back (maps_autogen/_util/_lazy.py); a package whose import is cheap, or whose import means its
use (the command line, a benchmark), imports the same way at the top level. For every package: what
`__all__` (a lazy one) or its public attributes (a plain one) say is exactly what the block declares,
every name is the object its module defines, importing a lazy package loads none of its modules, and
nothing else lives in an `__init__.py` (code goes in a private module)."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

import maps_autogen
from maps_autogen._util._lazy import declared_exports, lazy_exports

PACKAGE = Path(maps_autogen.__file__).parent
INITS = sorted(PACKAGE.rglob("__init__.py"))
INIT_LINES_AT_MOST = 700  # issue 47: every `__init__.py` together (1,553 lines before the exports were declared once)
LAZY_CALL = "__getattr__, __dir__ = lazy_exports(globals())"


def package_name(init: Path) -> str:
    return ".".join(["maps_autogen", *init.parent.relative_to(PACKAGE).parts])


def plain_exports(source: str, package: str) -> dict[str, tuple[str, str]]:
    """{name: (module, its name there)} of the top-level `from MODULE import name as name` lines."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module != "__future__" and all(a.asname for a in node.names):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.update({alias.asname: (module, alias.name) for alias in node.names if alias.asname})
    return found


def public_names(package: types.ModuleType) -> set[str]:
    """The package's public attributes, its submodules (set when they are imported) aside."""
    return {name for name, value in vars(package).items() if not name.startswith("_")
            and not (isinstance(value, types.ModuleType) and value.__name__ == f"{package.__name__}.{name}")}


def is_lazy(source: str) -> bool:
    return LAZY_CALL in source


@pytest.fixture(params=INITS, ids=lambda init: package_name(init))
def init(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


def test_the_reader_takes_the_type_checking_block_and_resolves_relative_modules(tmp_path: Path) -> None:
    """The block reader and the lazy names on a small package: without this, a reader that found
    nothing would pass every check below."""
    root = tmp_path / "pkg_exports" / "sub"
    root.mkdir(parents=True)
    (root.parent / "__init__.py").write_text("")
    (root / "_a.py").write_text("X = 1\ndef f():\n    return 2\n")
    (root.parent / "_b.py").write_text("class K:\n    pass\n")
    (root / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nfrom maps_autogen._util._lazy import lazy_exports\n"
        "import os as os\n"  # not in the block: never an export
        "if TYPE_CHECKING:\n    from ._a import (X as X, f as f)\n    from .._b import K as Renamed\n"
        "    from ._a import X\n"  # no `as`: not re-exported
        f"{LAZY_CALL}\n")
    assert declared_exports((root / "__init__.py").read_text(), "pkg_exports.sub") == {
        "X": ("pkg_exports.sub._a", "X"), "f": ("pkg_exports.sub._a", "f"), "Renamed": ("pkg_exports._b", "K")}
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("pkg_exports.sub")
        assert "pkg_exports.sub._a" not in sys.modules
        assert module.__all__ == ["Renamed", "X", "f"] and module.f() == 2 and module.Renamed.__name__ == "K"
        assert {"Renamed", "X", "f"} <= set(dir(module))
        with pytest.raises(AttributeError, match="has no attribute 'g'"):
            module.g  # noqa: B018
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.startswith("pkg_exports")]:
            del sys.modules[name]
    namespace: dict[str, object] = {"__name__": "p", "__file__": str(root / "__init__.py")}
    attribute, _ = lazy_exports(namespace)
    with pytest.raises(ModuleNotFoundError):  # resolved against the namespace's own package name
        attribute("X")


def test_an_init_holds_only_its_exports(init: Path) -> None:
    """Docstring, the export block and the lazy hook: code that is not exports lives in a private module."""
    source = init.read_text(encoding="utf-8")
    allowed_imports = {("__future__", "annotations"), ("typing", "TYPE_CHECKING"),
                       ("maps_autogen._util._lazy", "lazy_exports")}
    other = []
    for index, node in enumerate(ast.parse(source).body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and (all(a.asname == a.name for a in node.names)
                                                 or {(node.module, a.name) for a in node.names} <= allowed_imports):
            continue
        if (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
                and all(isinstance(s, ast.ImportFrom) and all(a.asname for a in s.names) for s in node.body)):
            continue
        if ast.unparse(node) == LAZY_CALL:
            continue
        other.append(f"line {node.lineno}: {ast.unparse(node).splitlines()[0]}")
    assert not other, f"{init.relative_to(PACKAGE.parent)} holds more than its exports (move it to a module): {other}"


def test_what_a_package_says_it_exports_is_its_block(init: Path) -> None:
    name = package_name(init)
    source = init.read_text(encoding="utf-8")
    package = importlib.import_module(name)
    if is_lazy(source):
        declared = declared_exports(source, name)
        assert declared, f"{name}: a lazy package with an empty block"
        assert package.__all__ == sorted(declared)
        assert set(declared) <= set(dir(package))
        public = {n for n in public_names(package)} - {"TYPE_CHECKING", "lazy_exports"}
        assert public <= set(declared), f"{name} holds names its block does not declare: {public - set(declared)}"
    else:
        declared = plain_exports(source, name)
        public = public_names(package)
        assert public == set(declared), f"{name}: public names {sorted(public ^ set(declared))} differ from its block"
    for exported, (module, original) in declared.items():
        assert getattr(package, exported) is getattr(importlib.import_module(module), original), f"{name}.{exported}"


def test_no_name_is_declared_twice(init: Path) -> None:
    names = [alias.asname for node in ast.walk(ast.parse(init.read_text(encoding="utf-8")))
             if isinstance(node, ast.ImportFrom) for alias in node.names if alias.asname]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})


def test_a_name_patched_in_its_module_is_what_its_package_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lazy package keeps none of its names: a patch of a name in its module (the usual mock.patch
    target) reaches whoever takes it through the package, and leaves nothing behind once undone."""
    import maps_autogen.model.local as local
    from maps_autogen.model.local import _server

    real = _server.shared_local_server
    assert local.shared_local_server is real
    with monkeypatch.context() as patch:
        patch.setattr("maps_autogen.model.local._server.shared_local_server", stand_in := object())
        assert local.shared_local_server is stand_in
    assert local.shared_local_server is real


def test_importing_a_lazy_package_loads_none_of_its_modules() -> None:
    """Each lazy package imported in a fresh interpreter: none of its own modules is loaded (the lazy
    hook's own module aside), so `import maps_autogen.records` costs nothing until a name is used."""
    lazy = [package_name(init) for init in INITS if is_lazy(init.read_text(encoding="utf-8"))]
    assert "maps_autogen" in lazy and "maps_autogen.records" in lazy
    code = ("import importlib, json, sys\nloaded = {}\n"
            "for name in sys.argv[1:]:\n"
            "    before = set(sys.modules)\n    importlib.import_module(name)\n"
            "    loaded[name] = sorted(set(sys.modules) - before)\n"
            "print(json.dumps(loaded))\n")
    for name in lazy:  # one interpreter each: what a package loads is not hidden by an earlier one's
        result = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        own = [module for module in json.loads(result.stdout)[name]
               if module.startswith(f"{name}.") and module not in ("maps_autogen._util", "maps_autogen._util._lazy")]
        assert own == [], f"import {name} loaded {own}"


def test_the_init_files_together_stay_small() -> None:
    lines = sum(len(init.read_text(encoding="utf-8").splitlines()) for init in INITS)
    assert lines <= INIT_LINES_AT_MOST, f"the __init__.py files hold {lines} lines together (at most {INIT_LINES_AT_MOST})"
