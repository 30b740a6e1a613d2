"""The package's imports run one way, down the layers docs/development.md lists.

The import graph is read statically (ast) from every module of `maps_autogen`: every `import`
and `from ... import`, including those inside functions (a lazy import that goes up the layers
is still a dependency the wrong way); only imports under `if TYPE_CHECKING:` are left out (they
never run), except that a name taken from a lazy package (`_util/_lazy.py`) is an import of the
module its export block names for it. A registry that imports its own children by name
(`importlib.import_module(f"{__name__}.{name}")`, or `{__package__}` from a module beside them)
depends on each of them. Importing a
submodule also runs its parent package's `__init__`; that implicit edge is not counted.

Three checks: no cycle between modules, no cycle between first-level packages and modules
(`maps_autogen.eval`, `maps_autogen.benchmarks`, `maps_autogen.cli`, ...), and every import
points at the importer's own layer or one listed before it in LAYERS.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
from pathlib import Path

import pytest

import maps_autogen
from maps_autogen._util._lazy import declared_exports

PACKAGE = "maps_autogen"

# Lowest first: a module may import from its own layer and from the layers before it, never
# from a later one. Names are relative to maps_autogen ("" is the package itself); a pattern
# with `*` covers what no exact name or longer pattern claims.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # helpers with no domain of their own: errors, text and secrets, limits, interrupts, the lifeline,
    # the run lock, the one atomic writer
    ("_util", ("_util", "_util.*")),
    # agents.yaml, config lists, the team, prompts, which model each step talks to, the defaults
    ("settings", ("settings", "settings.*")),
    # the schema of every file a run writes, the typed readers, the one writer
    ("records", ("records", "records.*")),
    # a problem and its images; what every benchmark's data side builds on
    ("problem", ("problem", "problem.*")),
    # the benchmarks, one package each: its task (a data set's rows made problems) and its official scorer
    # (rules on text, which scoring applies); neither needs a model
    ("benchmarks", ("benchmarks", "benchmarks.*")),
    # the model client, service answers, cache, pools, tokens, the embedded model
    ("model", ("model", "model.*")),
    # AG2 and its adapter, the Manager's rules, the chat, a person in it, the transcript, one solve
    ("orchestration", ("orchestration", "orchestration.*")),
    # the tally and `maps score`: recorded answers scored by a benchmark's rules
    ("scoring", ("scoring", "scoring.*")),
    # `maps eval` and `maps merge`: whole benchmarks solved, scored and logged
    ("eval", ("eval", "eval.*")),
    # reading runs: `maps report`, the paper's tables, the live view, `maps view`
    ("report", ("report", "report.*")),
    # the Python API, and the package that re-exports it lazily
    ("api", ("api", "api.*", "")),
    ("cli", ("cli", "cli.*")),
    # MAPS as Inspect tasks (`inspect eval maps_autogen/...`): loaded by Inspect only, never by maps
    ("inspect", ("inspect_tasks", "inspect_tasks.*")),
)
LAYER_ORDER = [name for name, _ in LAYERS]


def module_files(root: Path, package: str) -> dict[str, Path]:
    """{dotted module name: file} for every module of the package under `root`."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts])] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks (the body, not the else)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).split(".")[-1] == "TYPE_CHECKING":
            for statement in node.body:
                skipped.update(id(sub) for sub in ast.walk(statement))
    return skipped


@functools.cache
def _lazy_block(path: Path, package: str) -> dict[str, tuple[str, str]]:
    source = path.read_text(encoding="utf-8")
    return declared_exports(source, package) if "lazy_exports(globals())" in source else {}


def _lazy_exports(package: str, modules: dict[str, Path]) -> dict[str, tuple[str, str]]:
    """{name: (module, name there)} of a lazy package's export block (`_util/_lazy.py`), else {}."""
    path = modules.get(package)
    return _lazy_block(path, package) if path is not None and path.name == "__init__.py" else {}


def _targets(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    """The package's modules one import statement (or registry call) loads."""
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        # `from package import submodule` loads the submodule; `from module import name` the module; a
        # name of a lazy package's block, the module the block names for it
        lazy = _lazy_exports(prefix, modules)
        names = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules
                 else lazy[alias.name][0] if alias.name in lazy else prefix for alias in node.names]
    elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args:
        argument = node.args[0]
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            names = [argument.value]
        elif (isinstance(argument, ast.JoinedStr) and argument.values
              and ast.unparse(argument.values[0]) in ("{__name__}", "{__package__}")):  # a registry loading its children
            parent = module if is_package or ast.unparse(argument.values[0]) == "{__name__}" else module.rpartition(".")[0]
            names = [child for child in modules if child.rpartition(".")[0] == parent]
        # any other dynamic import is a call-back by name (e.g. a worker running the caller's
        # own function), not a dependency of the module that makes the call
    targets = []
    for name in names:
        while name and name not in modules:  # `import a.b.c` where c is an attribute
            name = name.rpartition(".")[0]
        if name and name != module:
            targets.append(name)
    return targets


def import_graph(root: Path, package: str) -> dict[str, dict[str, int]]:
    """{module: {imported module of the package: first line}} for every module under `root`."""
    modules = module_files(root, package)
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skipped = _type_checking_only(tree)
        edges = graph.setdefault(module, {})
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            for target in _targets(node, module, path.name == "__init__.py", modules):
                edges.setdefault(target, node.lineno)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a → b → … → a) per strongly connected component of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest way from the component's first node back to itself, inside the component."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, ()) & component):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError("a strongly connected component always has a cycle")  # pragma: no cover


def first_level(module: str) -> str:
    """maps_autogen.eval._runner → maps_autogen.eval; maps_autogen.cli → maps_autogen.cli."""
    return ".".join(module.split(".")[:2])


def layer_of(module: str) -> str | None:
    """The layer LAYERS puts the module in: an exact name, else the longest matching pattern."""
    relative = module[len(PACKAGE) + 1:] if module != PACKAGE else ""
    exact = [layer for layer, names in LAYERS if relative in names]
    if exact:
        return exact[0]
    patterns = [(len(name), layer) for layer, names in LAYERS for name in names
                if "*" in name and fnmatch.fnmatchcase(relative, name)]
    return max(patterns)[1] if patterns else None


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, int]]:
    return import_graph(Path(maps_autogen.__file__).parent, PACKAGE)


def _plain(graph: dict[str, dict[str, int]]) -> dict[str, set[str]]:
    return {module: set(edges) for module, edges in graph.items()}


def test_the_graph_reader_sees_lazy_relative_and_registry_imports_and_skips_type_checking(tmp_path: Path) -> None:
    """The reader on a small package: without this, a reader that missed imports would pass
    every check below."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "low.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.high import Thing\n"
        "def later():\n    from pkg import high\n    return high\n")
    (root / "high.py").write_text("from .low import later\nimport pkg.sub.leaf.attribute\n")
    (root / "sub" / "__init__.py").write_text(
        "import importlib\ndef get(name):\n    return importlib.import_module(f'{__name__}.{name}')\n")
    (root / "sub" / "leaf.py").write_text("from ..low import later\n")
    (root / "sub" / "_reg.py").write_text(
        "import importlib\ndef get(name):\n    return importlib.import_module(f'{__package__}.{name}')\n")
    (root / "lz").mkdir()
    (root / "lz" / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nfrom maps_autogen._util._lazy import lazy_exports\n"
        "if TYPE_CHECKING:\n    from ._m import T as T\n__getattr__, __dir__ = lazy_exports(globals())\n")
    (root / "lz" / "_m.py").write_text("T = 1\n")
    (root / "user.py").write_text("from pkg.lz import T\n")
    graph = import_graph(root, "pkg")
    assert set(graph["pkg.user"]) == {"pkg.lz._m"}  # through the lazy package's block
    assert set(graph["pkg.low"]) == {"pkg.high"}  # the lazy one; the TYPE_CHECKING one is not counted
    assert set(graph["pkg.high"]) == {"pkg.low", "pkg.sub.leaf"}
    assert set(graph["pkg.sub"]) == {"pkg.sub.leaf", "pkg.sub._reg"}  # the registry's children
    assert set(graph["pkg.sub._reg"]) == {"pkg.sub.leaf"}  # a registry beside them: its package's children
    assert set(graph["pkg.sub.leaf"]) == {"pkg.low"}
    assert find_cycles(_plain(graph)) == [["pkg.high", "pkg.low", "pkg.high"]]


def test_every_module_has_a_layer(graph: dict[str, dict[str, int]]) -> None:
    unplaced = sorted(module for module in graph if layer_of(module) is None)
    assert not unplaced, f"modules in no layer (add each to LAYERS in {Path(__file__).name}): {', '.join(unplaced)}"


def test_imports_follow_the_layer_order(graph: dict[str, dict[str, int]]) -> None:
    """Every import points at the importer's own layer or a lower one."""
    wrong = []
    for module, edges in sorted(graph.items()):
        mine = layer_of(module)
        for target, line in sorted(edges.items()):
            theirs = layer_of(target)
            if mine and theirs and LAYER_ORDER.index(theirs) > LAYER_ORDER.index(mine):
                wrong.append(f"{module} ({mine}) line {line} imports {target} ({theirs})")
    assert not wrong, "imports up the layers " + " → ".join(LAYER_ORDER) + ":\n" + "\n".join(wrong)


def test_no_import_cycle_between_modules(graph: dict[str, dict[str, int]]) -> None:
    cycles = find_cycles(_plain(graph))
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(cycle) for cycle in cycles)


def test_no_import_cycle_between_first_level_packages(graph: dict[str, dict[str, int]]) -> None:
    packages: dict[str, set[str]] = {}
    why: dict[tuple[str, str], str] = {}
    for module, edges in graph.items():
        for target, line in edges.items():
            source, destination = first_level(module), first_level(target)
            if source != destination:
                packages.setdefault(source, set()).add(destination)
                why.setdefault((source, destination), f"{module} line {line} imports {target}")
    cycles = find_cycles(packages)
    assert not cycles, "import cycles between first-level packages:\n" + "\n".join(
        " → ".join(cycle) + "\n  " + "\n  ".join(why[pair] for pair in zip(cycle, cycle[1:])) for cycle in cycles)


def test_no_benchmark_imports_another(graph: dict[str, dict[str, int]]) -> None:
    """Each benchmark package (benchmarks/<name>/) uses only the shared benchmarks modules, so a
    benchmark can be added or removed alone."""
    prefix = "maps_autogen.benchmarks."
    packages = {module[len(prefix):].split(".")[0] for module in graph
                if module.startswith(prefix) and "." in module[len(prefix):]}
    assert packages >= {"mathvista", "emma", "olympiadbench", "custom"}  # the check sees the benchmarks

    def benchmark_of(module: str) -> str | None:
        name = module[len(prefix):].split(".")[0] if module.startswith(prefix) else None
        return name if name in packages else None

    wrong = [f"{module} line {line} imports {target}"
             for module, edges in sorted(graph.items()) for target, line in sorted(edges.items())
             if benchmark_of(module) and benchmark_of(target) and benchmark_of(module) != benchmark_of(target)]
    assert not wrong, "benchmarks importing each other (move what they share into benchmarks/):\n" + "\n".join(wrong)
