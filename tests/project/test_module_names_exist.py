"""Every module a comment, a docstring or a docs page names exists, so a reader sent to a file
finds it (after a module moves, its old name left in a comment is the bug).

Read: the comments and docstrings (string statements) of every Python file in maps_autogen/,
tests/, perf/, scripts/ and examples/, and the whole text of docs/*.md. Named: anything that looks like a
module path (`_lifeline.py`, `orchestration/_flow.py`). A path with a slash exists from the folder
of the file naming it, a folder above it, or the package (`eval/_runner.py` from docs/); one whose
first part is an installed package (`lm_eval/result_schema.py`) exists in that package. A bare
file name is some module's file name: a module of the package when the package names it (the
package's comments never point into the tests), any module of the tree elsewhere."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "maps_autogen"
FOLDERS = ("maps_autogen", "tests", "perf", "scripts", "examples")  # the tree's Python
# a module path, not part of a longer one, a URL or a git revision's path (`9f182ff:scripts/x.py`)
NAMED = re.compile(r"(?<![\w./:-])((?:[\w-]+/)*[\w-]+\.py)\b")
# Other projects' files, named where our code, scripts, tests and docs follow theirs (the official
# evaluators' repositories, never installed): EMMA-Bench/EMMA's and OpenBMB/OlympiadBench's.
FOREIGN = {"evaluate.py", "utils.py", "evaluation/evaluate.py", "evaluation/utils.py",
           "inference/judge.py", "code/math_judger.py", "judge.py"}


def sources() -> list[Path]:
    """The files whose comments and docstrings are read, and the docs pages."""
    python = [path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py")]
    return sorted(python) + sorted((ROOT / "docs").glob("*.md"))


def comments_and_docstrings(path: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of each comment and string statement of a Python file; a page's whole text."""
    source = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield 1, source
        return
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value


def module_names(root: Path) -> set[str]:
    return {path.name for path in root.rglob("*.py")}


def installed(name: str) -> bool:
    """Whether `name` (a path whose first part names a package) is a file of an installed package."""
    spec = importlib.util.find_spec(name.split("/")[0])
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    return any((Path(folder).parent / name).is_file() for folder in folders)


def exists(name: str, named_in: Path, modules: set[str]) -> bool:
    """Whether the module `name`, named in the file `named_in`, exists (see the module doc)."""
    if "/" not in name:
        return name in modules
    folders = [folder for folder in named_in.parents if folder == ROOT or ROOT in folder.parents]
    return any((folder / name).exists() for folder in [*folders, PACKAGE]) or installed(name)


def stale_names(paths: list[Path]) -> list[str]:
    """`file:line: name` for each module named in `paths` that does not exist."""
    in_package, in_tree = module_names(PACKAGE), set().union(*(module_names(ROOT / folder) for folder in FOLDERS))
    stale = []
    for path in paths:
        where = path.relative_to(ROOT).as_posix() if ROOT in path.parents else str(path)
        modules = in_package if PACKAGE in path.parents else in_tree
        found = [(line + text.count("\n", 0, match.start()), match.group(1))
                 for line, text in comments_and_docstrings(path) for match in NAMED.finditer(text)]
        stale += [f"{where}:{line}: {name}" for line, name in sorted(found)
                  if name not in FOREIGN and not exists(name, path, modules)]
    return stale


def test_every_module_a_comment_a_docstring_or_a_docs_page_names_exists() -> None:
    stale = stale_names(sources())
    assert not stale, "modules named that do not exist (name them as they are now):\n" + "\n".join(stale)


def test_a_stale_name_is_found_and_a_real_one_is_not(tmp_path: Path) -> None:
    named = tmp_path / "named.py"
    named.write_text('"""Runs orchestration/_flow.py\'s rules; see also eval/nowhere.py."""\n\n'
                     "X = 1  # the lifeline.py of old, beside _flow.py and lm_eval/result_schema.py\n"
                     "URL = 'https://example.com/lifeline.py'  # not a comment: not read\n")
    assert stale_names([named]) == [f"{named}:1: eval/nowhere.py", f"{named}:3: lifeline.py"]
