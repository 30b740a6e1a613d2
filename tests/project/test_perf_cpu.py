"""perf/cpu_per_problem.py runs (its short mode) and prints its figures; the figures themselves
depend on the machine's load and are not asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import clean_env

pytestmark = pytest.mark.perf  # left out of `make test-fast`

REPO = Path(__file__).resolve().parents[2]


def test_cpu_per_problem_short_mode_prints_its_figures() -> None:
    result = subprocess.run([sys.executable, str(REPO / "perf" / "cpu_per_problem.py"), "--short"],
                            env=clean_env(), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert re.search(r"3 problems at concurrency 1 .*, (\d+) requests", out), out
    assert re.search(r"time to the first request: maps \d+\.\d+ s, bare client \d+\.\d+ s", out), out
    assert re.search(r"CPU per problem in steady state: maps \d+\.\d+ ms, bare client \d+\.\d+ ms "
                     r"\(same request bodies\): \d+\.\dx", out), out
    assert re.search(r"CPU per problem after the first request: maps \d+\.\d+ ms, bare client \d+\.\d+ ms "
                     r"\(same request bodies\): \d+\.\dx", out), out
