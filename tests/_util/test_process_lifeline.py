"""No helper process of ours outlives the process that started it (maps_autogen/_util/_lifeline.py):
the symbolic judge's sympy helper killed with its parent in the middle of a long judgement (a
parent-death signal on Linux; the pipe watchdog used elsewhere, tried here too), the embedded
model's server with its parent, and a helper started by a thread that has ended still serves
(children are started on one long-lived thread: Linux sends the parent-death signal when the
starting *thread* ends)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from maps_autogen.benchmarks import _symbolic
from tests.helpers.common import REPO
from tests.helpers.eval_fixtures import alive, wait_for

# A judgement that never ends, in a module the helper imports by name (run_bounded's contract):
# it first says which process runs it, so the test knows the helper is inside the call.
SPIN = '''
import os
from pathlib import Path


def spin(marker):
    Path(marker).write_text(str(os.getpid()))
    while True:
        pass
'''

PARENT = '''
import sys
from maps_autogen._util import _lifeline as lifeline
lifeline.METHOD = sys.argv[2]
import spinning
from maps_autogen.benchmarks._symbolic import run_bounded
run_bounded(spinning.spin, sys.argv[1], fallback=False, timeout=600)
'''


@pytest.mark.parametrize("method", ["prctl", "pipe"])
def test_a_helper_in_a_long_judgement_dies_with_its_killed_parent(tmp_path: Path, method: str) -> None:
    (tmp_path / "spinning.py").write_text(SPIN)
    marker = tmp_path / "helper.pid"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(marker), method], env=env, cwd=tmp_path,
                              stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: marker.is_file() and marker.read_text().isdigit(), "the helper to start the judgement")
        helper = int(marker.read_text())
        assert alive(helper)
        parent.kill()  # SIGKILL: no handler, no atexit, nothing of ours runs in the parent
        parent.wait(timeout=30)
        wait_for(lambda: not alive(helper), "the helper to die with its parent", timeout=30)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_the_embedded_models_server_dies_with_its_killed_parent(tmp_path: Path) -> None:
    program = ("import sys\n"
               "from maps_autogen.model.local._server import LocalServer\n"
               "server = LocalServer()\n"
               "print(server.pid, server.log_path, flush=True)\n"
               "sys.stdin.read()\n")
    parent = subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=REPO)
    try:
        assert parent.stdout is not None
        pid, log = parent.stdout.readline().split()
        child = int(pid)
        assert alive(child)
        parent.kill()
        parent.wait(timeout=30)
        wait_for(lambda: not alive(int(child)), "the model server to die with its parent", timeout=30)
        wait_for(lambda: not Path(log).exists(), "its temporary log to be removed", timeout=30)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_a_helper_started_by_a_thread_that_ended_still_serves() -> None:
    pool = _symbolic.WorkerPool(max_workers=1)
    try:
        pids: list[int] = []
        starter = threading.Thread(target=lambda: pids.append(pool.run(("os", "getpid"), (), 120)))
        starter.start()
        starter.join()
        assert pids and alive(pids[0])
        # The thread that asked for the helper has ended; the helper lives on, and serves again.
        assert pool.run(("os", "getpid"), (), 120) == pids[0]
    finally:
        pool.shutdown()


def test_a_helper_ignores_the_terminals_ctrl_c_and_sigterm() -> None:
    """Ctrl-C in a terminal signals the whole process group, Slurm signals every process of a
    job: a helper never dies of it mid-judgement (its parent decides, and stops it)."""
    pool = _symbolic.WorkerPool(max_workers=1)
    try:
        pid = pool.run(("os", "getpid"), (), 120)
        os.kill(pid, signal.SIGINT)
        os.kill(pid, signal.SIGTERM)
        assert pool.run(("os", "getpid"), (), 120) == pid and alive(pid)
    finally:
        pool.shutdown()
