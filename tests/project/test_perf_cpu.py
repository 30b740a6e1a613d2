"""perf/cpu_per_problem.py runs (its short mode, and its profile mode) and prints its figures; the figures themselves
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


def test_cpu_per_problem_profile_mode_prints_where_the_time_went() -> None:
    result = subprocess.run([sys.executable, str(REPO / "perf" / "cpu_per_problem.py"), "--profile", "--problems", "4"],
                            env=clean_env(), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    profiled = re.search(r"profile of 2 problems \(cProfile, .*\): (\d+\.\d) ms per problem", out)
    used = re.search(r"CPU of the maps process over the same problems \(.*\): (\d+\.\d) ms per problem", out)
    assert profiled and used, out
    # The threads' profiles account for no more CPU than the process used (a thread's open wait or
    # recv, ended by another thread's clock, once made the profile four times the process's CPU);
    # 10 ms: the /proc clock's tick, over 2 problems, and a margin.
    assert float(profiled[1]) <= float(used[1]) + 10, out
    sections = ["own time by module or package:", "functions by own time (calls per problem):",
                "functions by cumulative time (calls per problem):"]
    assert all(section in out for section in sections), out
    # Our own code is among the entries, and the per-problem chat is in the cumulative list.
    assert re.search(r"^ +\d+\.\d\d ms +\d+\.\d% +maps_autogen/", out, re.MULTILINE), out
    assert "orchestration/_solving.py" in out.split(sections[2])[1], out
