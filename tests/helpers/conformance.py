"""The conformance data the conformance tests read (docs/development.md: Conformance data): the
subset that ships with the project (tests/fixtures/conformance/, always there, so a clone runs
every conformance test) and the full sets in the developers' shared folder, read in place where
they are found: $MAPS_CONFORMANCE_DIR, then shared/conformance/ beside the checkout or beside any
folder above it (a git worktree's). Without the full sets a clone runs the subset alone; in CI
(CI=true) a missing full set fails the run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.common import REPO

CONFORMANCE_VARIABLE = "MAPS_CONFORMANCE_DIR"
BUNDLED = REPO / "tests" / "fixtures" / "conformance"

# Each benchmark's file in the shared folder and its subset here.
MATHVISTA = ("mathvista_testmini_verdicts.dev.jsonl.gz", "mathvista_testmini_verdicts.subset.jsonl.gz")
EMMA = ("emma_verdicts.dev.jsonl.gz", "emma_verdicts.subset.jsonl.gz")
OLYMPIADBENCH_JUDGED = ("olympiadbench_judged.dev.jsonl", "olympiadbench_judged.subset.jsonl")
OLYMPIADBENCH_EXAMPLES = ("olympiadbench_official_examples.json", "olympiadbench_official_examples.json")


@dataclass(frozen=True)
class ConformanceData:
    """One file of conformance data: the shipped subset ("bundled") or the full set ("shared")."""

    kind: str
    path: Path

    def __str__(self) -> str:
        return self.kind


def conformance_folders() -> list[Path]:
    """Where the full sets are looked for, in order: $MAPS_CONFORMANCE_DIR, then shared/conformance/
    beside the checkout or beside any folder above it (a git worktree's)."""
    named = [Path(os.environ[CONFORMANCE_VARIABLE]).expanduser()] if os.environ.get(CONFORMANCE_VARIABLE) else []
    return named + [folder / "shared" / "conformance" for folder in REPO.parents]


def shared_file(name: str) -> Path | None:
    """A file of the full sets, None when it is not found (a user's clone). In CI (CI=true) a
    missing file fails, saying where it was looked for and how to get it."""
    for folder in conformance_folders():
        if (folder / name).is_file():
            return folder / name
    if os.environ.get("CI"):
        pytest.fail(f"conformance data {name} not found (looked in {CONFORMANCE_VARIABLE}, then shared/conformance/ "
                    f"beside the checkout and the folders above it): the developers' full sets of official verdicts, "
                    f"see docs/development.md#conformance-data; put the folder at "
                    f"{REPO.parent / 'shared' / 'conformance'} or set {CONFORMANCE_VARIABLE}; CI must have it",
                    pytrace=False)
    return None


def conformance_data(files: tuple[str, str]) -> list[ConformanceData]:
    """The bundled subset of a benchmark's data, then its full set where it is found."""
    shared_name, bundled_name = files
    found = shared_file(shared_name)
    return [ConformanceData("bundled", BUNDLED / bundled_name)] + ([ConformanceData("shared", found)] if found else [])


def full_or_bundled(files: tuple[str, str]) -> Path:
    """The full set's file where it is found, else the bundled subset's."""
    return conformance_data(files)[-1].path


def report_line() -> str:
    """What pytest's header says of the conformance data (tests/conftest.py)."""
    folders = [folder for folder in conformance_folders() if (folder / MATHVISTA[0]).is_file()]
    full = f"and the full sets in {folders[0]}" if folders else "only (the full sets were not found)"
    return f"conformance data: the bundled subset in {BUNDLED.relative_to(REPO)} {full}"


__all__ = ["BUNDLED", "CONFORMANCE_VARIABLE", "EMMA", "MATHVISTA", "OLYMPIADBENCH_EXAMPLES", "OLYMPIADBENCH_JUDGED",
           "ConformanceData", "conformance_data", "conformance_folders", "full_or_bundled", "report_line", "shared_file"]
