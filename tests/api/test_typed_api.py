"""The Python API is typed where people type it: mypy checks each call of `maps_autogen.solve`,
`evaluate` and every other function `takes` makes (a misspelt keyword, a value of the wrong type,
a missing argument, another command's options object) against the Protocols of
maps_autogen/api/_signatures.py, which scripts/api_signatures.py makes from the options'
declarations, the ones the command line, `inspect.signature` and `help()` are made from; the
committed file and the declarations never drift apart."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.helpers.common import REPO
from tests.helpers.typed_calls import check_calls, expected_errors, mypy_errors


def generator() -> ModuleType:
    """scripts/api_signatures.py, imported."""
    spec = importlib.util.spec_from_file_location("api_signatures", REPO / "scripts" / "api_signatures.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules.setdefault("api_signatures", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(module)
    return module


def test_mypy_flags_a_misspelt_keyword_and_passes_the_right_calls(tmp_path: Path) -> None:
    check_calls(tmp_path, search=REPO)


def test_the_signatures_are_the_declarations_as_they_are() -> None:
    """The committed Protocols are what the generator makes from the declarations now (an option
    added, renamed or retyped without running it fails here)."""
    committed = (REPO / "maps_autogen" / "api" / "_signatures.py").read_text(encoding="utf-8")
    assert committed == generator().source(), "the API's signatures drifted: run python scripts/api_signatures.py"


def test_each_api_function_is_typed_by_its_own_protocol() -> None:
    """Every function `takes` makes in api/_api.py carries `@typed(<its name>Function)`, and the
    generator makes a Protocol for exactly those functions."""
    tree = ast.parse((REPO / "maps_autogen" / "api" / "_api.py").read_text(encoding="utf-8"))
    made, typed = set(), {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        calls = {ast.unparse(d.func): d for d in node.decorator_list if isinstance(d, ast.Call)}
        if "takes" in calls:
            made.add(node.name)
            typed[node.name] = ast.unparse(calls["typed"].args[0]) if "typed" in calls else None
    names = generator()
    assert made and typed == {name: names.protocol_name(name) for name in made}
    import maps_autogen.api._api as api

    assert {function.name for function in names.api_functions(api)} == made


SAMPLE = '''\
from __future__ import annotations

from dataclasses import dataclass

from maps_autogen.settings import Options, argument, option, takes


@dataclass(frozen=True, kw_only=True)
class RunOptions(Options):
    benchmark: str = argument("The benchmark.", kind="text")
    tries: int = option(2, "--tries", "How often a problem is tried.", kind="whole", low=1, high=5)


@takes(RunOptions)
def run(*, options: RunOptions, progress: bool = False) -> int:
    """Run it."""
    return options.tries


__all__ = ["RunOptions", "run"]
'''

SAMPLE_CALLS = '''\
from sample import RunOptions
from sample_signatures import RunFunction

run: RunFunction
run("custom", tries=3, progress=True)
run(RunOptions(benchmark="custom"), tries=4)
run("custom", triess=3)  # wrong: Unexpected keyword argument "triess"
run("custom", tries="3")  # wrong: No overload variant
'''


def test_an_option_declared_once_reaches_the_static_types(tmp_path: Path) -> None:
    """A new options class and API function, declared as ours are: the generator gives its
    Protocol each option's keyword, type and default, and mypy checks calls against it."""
    (tmp_path / "sample.py").write_text(SAMPLE)
    sys.path.insert(0, str(tmp_path))
    try:
        text = generator().source("sample")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("sample", None)
    assert text.count("tries: int = 2") == 3 and "class RunFunction(Protocol):" in text
    (tmp_path / "sample_signatures.py").write_text(text)
    script = tmp_path / "calls.py"
    script.write_text(SAMPLE_CALLS)
    errors = mypy_errors(script, search=REPO, also=("sample", "sample_signatures"))
    expected = expected_errors(SAMPLE_CALLS)
    assert sorted(errors) == sorted(expected), errors
    assert all(expected[line] in " ".join(errors[line]) for line in expected), errors
