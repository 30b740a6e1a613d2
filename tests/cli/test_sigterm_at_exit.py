"""A SIGTERM right after a command's last line (its exit code decided, the interpreter on its way
out) changes nothing: the process exits with the command's code, never dies by the raw signal
(an uncaught KeyboardInterrupt in the exit path makes CPython kill itself with SIGINT)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from tests.helpers.common import REPO, clean_env

# `maps config`, then, on the way out of the console script (main's SystemExit unwinding), a
# pause the test fills with a SIGTERM: the window right after the last line.
AFTER_THE_LAST_LINE = """
import sys
from maps_autogen.cli import main
try:
    main(["config"])
finally:
    print("last line printed", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.parametrize("count", [1, 3])
def test_sigterm_after_the_last_line_exits_with_the_command_s_code(count: int) -> None:
    process = subprocess.Popen([sys.executable, "-c", AFTER_THE_LAST_LINE], cwd=REPO, env=clean_env(),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    for line in process.stdout:
        if line == "last line printed\n":
            break
    for _ in range(count):  # a batch system often sends it more than once
        process.send_signal(signal.SIGTERM)
    process.stdin.close()
    process.wait(timeout=60)
    stderr = process.stderr.read() if process.stderr else ""
    assert process.returncode == 0, (process.returncode, stderr)
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
