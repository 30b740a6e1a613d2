"""Set-up that says what it does: every phase of scripts/setup*.sh that installs something first
says what, where and how big (pip and apt-get are quiet meanwhile), the README says what `make
test` installs, system packages included, and how long it takes, and every test file the scripts,
the docs and the README name exists."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.common import REPO

SCRIPTS = sorted((REPO / "scripts").glob("setup*.sh"))
INSTALLS = re.compile(r"\b(pip install|apt-get install)\b")
SIZE = re.compile(r"\d+(\.\d+)? ?(MB|GB)\b")


def statements(script: Path) -> list[tuple[int, str]]:
    """The script's commands (a line continued with a backslash joined to the next), comments left out."""
    found: list[tuple[int, str]] = []
    pending = ""
    for number, line in enumerate(script.read_text().splitlines(), start=1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        pending += stripped.removesuffix("\\") + " "
        if not stripped.endswith("\\"):
            found.append((number, pending.strip()))
            pending = ""
    return found


def test_every_install_is_announced_with_its_size_before_it_runs() -> None:
    unannounced = []
    for script in SCRIPTS:
        said = ""
        for number, statement in statements(script):
            if statement.startswith("echo "):
                said = statement
            elif INSTALLS.search(statement) and "--upgrade pip" not in statement and not SIZE.search(said):
                unannounced.append(f"{script.name}:{number}: {statement}")
    assert not unannounced, "\n".join(unannounced)


def test_the_readme_says_what_make_test_installs_and_how_long_it_takes() -> None:
    readme = (REPO / "README.md").read_text()
    head = readme[: readme.index("\n## ", readme.index("make test"))]  # the part before the first section
    for said in ("Chromium", "Slurm", "MUNGE", "LiteLLM", "740 MB", "minutes"):
        assert said in head, said


def named_test_paths(text: str) -> set[str]:
    return {match.rstrip(".,:;)`") for match in re.findall(r"tests/[\w/*.]+\.py", text)}


def test_every_test_file_the_scripts_and_docs_name_exists() -> None:
    sources = [REPO / "README.md", REPO / "Makefile", *sorted((REPO / "docs").glob("*.md")), *SCRIPTS,
               *sorted((REPO / "examples").rglob("*.sh")), *sorted((REPO / "perf").glob("*.py"))]
    missing = []
    for source in sources:
        for path in named_test_paths(source.read_text()):
            if not (list(REPO.glob(path)) if "*" in path else (REPO / path).exists()):
                missing.append(f"{source.relative_to(REPO)}: {path}")
    assert not missing, "\n".join(missing)
