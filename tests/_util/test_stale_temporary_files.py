"""A writer killed with SIGKILL in the middle of an atomic write (artifacts.py writes a temporary
file beside the target, then renames it) leaves its temporary file; the next write of the same
target removes it, and only it: never the temporary file of a writer still alive, nor one
another host's writer made in a shared folder."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from maps_autogen._util import _artifacts as artifacts
from tests.helpers.common import REPO

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


def start_writer(target: Path) -> subprocess.Popen[str]:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
    return writer


def temporaries(target: Path) -> set[str]:
    return {path.name for path in target.parent.iterdir() if path.name.startswith(f".{target.name}.")}


def test_a_killed_writers_temporary_file_goes_with_the_next_write_and_a_live_ones_stays(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    artifacts.write_text_atomic(target, "old\n")
    killed = start_writer(target)
    left = temporaries(target)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert len(left) == 1 and f"-{killed.pid}." in next(iter(left))  # .summary.json.<host>-<pid>.<random>.tmp
    assert temporaries(target) == left  # SIGKILL runs no clean-up: the file stays behind
    elsewhere = tmp_path / ".summary.json.other-machine-1.abcdefgh.tmp"  # a live writer on another host
    elsewhere.write_text("theirs")
    live = start_writer(target)
    try:
        live_file = temporaries(target) - left - {elsewhere.name}
        assert len(live_file) == 1

        artifacts.write_text_atomic(target, "new\n")

        assert target.read_text() == "new\n"
        assert temporaries(target) == live_file | {elsewhere.name}  # only the dead writer's went
    finally:
        live.kill()
        live.wait()
