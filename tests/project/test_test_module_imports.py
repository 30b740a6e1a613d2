"""No test module imports another test module: what tests share lives in tests/helpers/ (and
the root conftest.py's fixtures), so a test file can be moved, renamed or deleted alone."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def imported_test_modules(source: str) -> set[str]:
    """The modules of tests/ outside tests.helpers that `source` imports (lazy imports included)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        if isinstance(node, ast.ImportFrom) and node.level:
            names = [f"relative import from {'.' * node.level}{node.module or ''}"]
        found |= {name for name in names if name.startswith("relative")
                  or (name.split(".")[0] == "tests" and name.split(".")[:2] != ["tests", "helpers"]
                      and name != "tests")}
    return found


def test_the_reader_sees_direct_lazy_and_relative_imports_of_test_modules() -> None:
    source = ("from tests.helpers.common import REPO\nimport tests.helpers.fake_openai\n"
              "from tests.eval.test_eval_cli import results\n"
              "def f():\n    import tests.report.test_view\n    from .test_x import y\n")
    assert imported_test_modules(source) == {"tests.eval.test_eval_cli", "tests.report.test_view",
                                             "relative import from .test_x"}


def test_no_test_module_imports_another() -> None:
    wrong = {}
    for path in sorted(TESTS.rglob("*.py")):
        if "helpers" in path.relative_to(TESTS).parts or "fixtures" in path.relative_to(TESTS).parts:
            continue
        found = imported_test_modules(path.read_text(encoding="utf-8"))
        if found:
            wrong[str(path.relative_to(TESTS.parent))] = sorted(found)
    assert not wrong, f"test modules importing other test modules (move what they share to tests/helpers/): {wrong}"
