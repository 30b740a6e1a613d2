"""The tests that run a perf/ script (minutes of measuring in all) are marked `perf`: `make
test-fast` leaves them out and `make test` (CI) runs them."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNS_A_PERF_SCRIPT = re.compile(r'\[sys\.executable, str\((?:REPO / "perf"|PERF) /')  # a perf/ script as a process


def test_a_test_that_runs_a_perf_script_is_marked_perf_and_left_out_of_test_fast() -> None:
    running = sorted(path for path in (REPO / "tests").rglob("test_*.py") if RUNS_A_PERF_SCRIPT.search(path.read_text()))
    assert {path.name for path in running} >= {"test_perf_scripts.py", "test_perf_cpu.py", "test_perf_local_model.py"}
    for path in running:
        module = importlib.import_module(".".join(path.relative_to(REPO).with_suffix("").parts))
        marks = getattr(module, "pytestmark", [])
        assert "perf" in {mark.name for mark in (marks if isinstance(marks, list) else [marks])}, path
    makefile = (REPO / "Makefile").read_text()
    fast = re.search(r"^FAST_MARKERS = (.*)$", makefile, re.MULTILINE)
    assert fast is not None and "not perf" in fast.group(1)
    test_target = re.search(r"^test: .*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert test_target is not None and not re.search(r"pytest .*\s-m\s", test_target.group(1))  # every marker runs
