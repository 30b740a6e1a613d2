"""A writer killed with SIGKILL in the middle of an atomic write (_util/_artifacts.py writes a temporary
file beside the target, then renames it) leaves its temporary file; the next write of the same
target removes it, and only it: never the temporary file of a writer still alive (in our pid
namespace or another one: a container on the same kernel), nor one another host's writer made
in a shared folder, nor a file whose name merely looks like one (a planted 20-digit pid)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maps_autogen._util import _artifacts as artifacts
from maps_autogen._util import _temporaries as temporaries
from maps_autogen._util._folders import folder_built_beside
from tests.helpers.common import REPO
from tests.helpers.eval_fixtures import wait_for

# A writer that stops in the middle of its write: it has written part of the file, says so,
# and waits (for ever) before the rename.
WRITER = '''
import sys, time
from pathlib import Path
from maps_autogen._util._artifacts import atomic_text_writer
with atomic_text_writer(Path(sys.argv[1])) as out:
    out.write("half of it")
    out.flush()
    print("writing", flush=True)
    while True:
        time.sleep(60)
'''

# A builder of a whole folder that stops half-way (maps view --out, maps merge --out).
BUILDER = '''
import sys, time
from pathlib import Path
from maps_autogen._util._folders import folder_built_beside
with folder_built_beside(Path(sys.argv[1]), fix="") as building:
    (building / "half").write_text("x")
    print("writing", flush=True)
    while True:
        time.sleep(60)
'''


def start(code: str, target: Path, prefix: list[str] | None = None) -> subprocess.Popen[str]:
    process = subprocess.Popen([*(prefix or []), sys.executable, "-c", code, str(target)], cwd=REPO,
                               stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.stdout is not None and process.stdout.readline() == "writing\n"
    return process


def temporaries_of(target: Path) -> set[str]:
    return {path.name for path in target.parent.iterdir() if path.name.startswith(f".{target.name}.")}


def test_a_killed_writers_temporary_file_goes_with_the_next_write_and_a_live_ones_stays(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    artifacts.write_text_atomic(target, "old\n")
    killed = start(WRITER, target)
    left = temporaries_of(target)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    # .summary.json.<host>-<pid namespace>-<pid>.<random>.tmp
    assert len(left) == 1 and f"-{temporaries.pid_namespace()}-{killed.pid}." in next(iter(left))
    assert temporaries_of(target) == left  # SIGKILL runs no clean-up: the file stays behind
    live = start(WRITER, target)
    try:
        live_file = temporaries_of(target) - left
        assert len(live_file) == 1

        artifacts.write_text_atomic(target, "new\n")

        assert target.read_text() == "new\n"
        assert temporaries_of(target) == live_file  # only the dead writer's went
    finally:
        live.kill()
        live.wait()


def test_another_hosts_and_planted_names_are_left_alone_and_never_crash_a_write(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    ours, namespace = temporaries.host_identity(), temporaries.pid_namespace()
    planted = [
        f".summary.json.{'0' * 16}-{namespace}-999999.abcdefgh.tmp",  # another host (a shared file system)
        f".summary.json.{ours}-{namespace}-{'9' * 20}.abcdefgh.tmp",  # a 20-digit pid (os.kill: OverflowError)
        f".summary.json.{ours}-{namespace}-0.abcdefgh.tmp",  # no pid Linux gives
        ".summary.json.vm-12345.abcdefgh.tmp",  # the shortened-host-name form of older versions
    ]
    long_ago = time.time() - 10 * temporaries.GRACE_S
    # Of this host, another pid namespace (a 20-digit one), old and unlocked: provably stale.
    stale = f".summary.json.{ours}-{'9' * 20}-1.abcdefgh.tmp"
    for name in [*planted, stale]:
        (tmp_path / name).write_text("theirs")
        os.utime(tmp_path / name, (long_ago, long_ago))

    artifacts.write_text_atomic(target, "ours\n")
    artifacts.write_text_atomic(target, "ours again\n")

    assert target.read_text() == "ours again\n"
    assert temporaries_of(target) == set(planted)


def test_the_host_identity_tells_apart_names_that_differ_after_a_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """Host names that share their first part, or their first 64 characters, are different hosts."""
    names = ["node1.cluster-a.example.org", "node1.cluster-b.example.org", "n" * 64 + "-a", "n" * 64 + "-b"]
    seen = set()
    for name in names:
        temporaries.host_identity.cache_clear()
        monkeypatch.setattr(temporaries.socket, "gethostname", lambda name=name: name)
        seen.add(temporaries.host_identity())
    temporaries.host_identity.cache_clear()
    assert len(seen) == len(names)


def in_another_pid_namespace() -> list[str]:
    """A command prefix that runs the rest in a new pid namespace as a pid that does not exist in
    ours (unshare, as root: CI runs as root)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        message = "needs root and unshare(1) to make a pid namespace"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI runs as root", pytrace=False)
        pytest.skip(message)
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    free = next(pid for pid in range(pid_max - 100, 300, -1) if not Path(f"/proc/{pid}").exists())
    # The shell's next child (the writer) gets pid `free` in the new namespace.
    return ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c",
            f'echo {free - 1} > /proc/sys/kernel/ns_last_pid && "$0" "$@"']


@pytest.mark.parametrize("code", [WRITER, BUILDER], ids=["file", "folder"])
def test_a_live_writer_in_another_pid_namespace_keeps_its_temporary(tmp_path: Path, code: str) -> None:
    target = tmp_path / "view"
    other = start(code, target, in_another_pid_namespace())
    try:
        (theirs,) = temporaries_of(target)
        host, namespace, pid = theirs.split(".")[-3].rsplit("-", 2)
        assert host == temporaries.host_identity() and namespace != str(temporaries.pid_namespace())
        assert not Path(f"/proc/{pid}").exists()  # its pid is nobody's in ours
        long_ago = time.time() - 10 * temporaries.GRACE_S  # and it is old: only its lock says it is alive
        os.utime(tmp_path / theirs, (long_ago, long_ago))

        write(target, code)
        assert theirs in temporaries_of(target)
    finally:
        other.kill()  # unshare --kill-child: its namespace's init, and with it every process in it, dies
        other.wait()
    wait_for(lambda: not _locked(tmp_path / theirs), "the kernel to end the other namespace's writer")
    write(target, code)
    assert theirs not in temporaries_of(target)  # the writer is gone: its lock is free, and it is old


def write(target: Path, code: str) -> None:
    """Write `target` whole, as `code`'s writer would have (a file, or a folder built beside it)."""
    if code == WRITER:
        artifacts.write_text_atomic(target, "ours\n")
        return
    shutil.rmtree(target, ignore_errors=True)
    with folder_built_beside(target, fix="") as building:
        (building / "index.html").write_text("ours")


def _locked(path: Path) -> bool:
    import fcntl

    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if path.is_dir() else 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
