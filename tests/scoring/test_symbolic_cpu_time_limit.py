"""The symbolic judge's per-item limit is counted in its helper's CPU time, not on the wall clock
(maps_autogen/benchmarks/_symbolic.py): a helper stopped (or starved) for longer than the limit
in the middle of a check still gives the right verdict; a check that really burns CPU past the
limit is stopped, also inside one long C-level call; a helper that uses no CPU and never answers
is ended by the wall-clock backstop. No assertion here depends on the machine's speed."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from maps_autogen.benchmarks import _symbolic
from maps_autogen.benchmarks.olympiadbench._scorer import judge_preprocessed
from tests.helpers.eval_fixtures import process_state, wait_for


def stop_in_the_middle_of_a_check(marker: str, first: str, second: str) -> bool:
    """Run in the helper: start the check, stop this process (as a starved machine would leave
    it without CPU), then finish the check once continued."""
    _symbolic.parse_latex(first)
    Path(marker).write_text(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGSTOP)
    return judge_preprocessed(first, second, 1e-8)


def burn_cpu(seconds: float) -> str:
    """Run in the helper: use `seconds` of CPU time in Python code, then answer."""
    started = time.process_time()
    while time.process_time() - started < seconds:
        pass
    return "done"


def wait_without_cpu(seconds: float) -> str:
    """Run in the helper: use no CPU time, and answer only after `seconds`."""
    time.sleep(seconds)
    return "done"


def test_a_helper_stopped_longer_than_the_limit_gives_the_right_verdict(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The backstop is not what this test is about: far away, so only the counting shows.
    monkeypatch.setattr(_symbolic, "WALL_CLOCK_FACTOR", 1000.0)
    limit = 1.0
    marker = tmp_path / "helper.pid"
    # The helper imports this module once, before the check under test (as it has the scorers').
    assert _symbolic.run_bounded(burn_cpu, 0.0, fallback=False, timeout=600) == "done"
    _symbolic.clear_incidents()
    with ThreadPoolExecutor(max_workers=1) as executor:
        future = executor.submit(_symbolic.run_bounded, stop_in_the_middle_of_a_check, str(marker),
                                 "\\frac{1}{2}+\\frac{1}{3}", "\\frac{5}{6}", fallback=_symbolic.NOT_FINISHED,
                                 timeout=limit)
        wait_for(lambda: marker.is_file() and marker.read_text().isdigit(), "the helper to start the check")
        helper = int(marker.read_text())
        wait_for(lambda: process_state(helper) == "T", "the helper to stop")
        stopped = threading.Event()
        stopped.wait(3 * limit)  # stopped for three times the limit on the wall clock
        with contextlib.suppress(ProcessLookupError):  # (a wall-clock limit has killed it meanwhile)
            os.kill(helper, signal.SIGCONT)
        assert future.result(timeout=600) is True
    assert _symbolic.incidents() == []


def test_a_check_that_burns_cpu_past_the_limit_still_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_symbolic, "WALL_CLOCK_FACTOR", 1000.0)  # only the CPU time can end it
    _symbolic.clear_incidents()
    result = _symbolic.run_bounded(burn_cpu, 600.0, fallback=_symbolic.NOT_FINISHED, timeout=0.5)
    assert isinstance(result, _symbolic.NotFinished)
    assert result.reason == "its symbolic check did not finish within the time limit of 0.5 s of CPU time"
    assert [incident.kind for incident in _symbolic.incidents()] == ["timeout"]
    # Inside one C-level call (no Python code runs until it returns) too.
    result = _symbolic.run_bounded(math.factorial, 10**8, fallback=_symbolic.NOT_FINISHED, timeout=0.5)
    assert isinstance(result, _symbolic.NotFinished) and "0.5 s of CPU time" in result.reason
    # A check within its limit is answered by a fresh helper.
    assert _symbolic.run_bounded(burn_cpu, 0.01, fallback=False, timeout=30) == "done"


def test_a_helper_that_uses_no_cpu_and_never_answers_ends_at_the_backstop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_symbolic, "WALL_CLOCK_FACTOR", 4.0)
    _symbolic.clear_incidents()
    result = _symbolic.run_bounded(wait_without_cpu, 3600.0, fallback=_symbolic.NOT_FINISHED, timeout=0.25)
    assert isinstance(result, _symbolic.NotFinished)
    assert result.reason == ("its symbolic check's helper did not answer within 1 s on the wall clock (the "
                             "backstop of its time limit of 0.25 s of CPU time)")
    assert [incident.kind for incident in _symbolic.incidents()] == ["timeout"]
