"""The real servers the test fixtures start (llama.cpp's server, the LiteLLM proxy, Chromium, the
Slurm daemons: tests/helpers/real_servers.py's `bound_popen`) end with the test process, however it
ends: a pytest killed with SIGKILL leaves none of them running, nor what they started, also what
they detached into a session of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from tests.helpers.common import REPO
from tests.helpers.eval_fixtures import alive, wait_for
from tests.helpers.real_servers import free_port

# A server as the fixtures start one: it first detaches a daemon of its own (a double fork into
# a new session, as slurmd's job steps and a browser's helpers are), then serves HTTP.
SERVER = '''
import http.server, subprocess, sys
marker, port = sys.argv[1], int(sys.argv[2])
subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
                  "'import time\\\\nwhile True: time.sleep(60)', sys.argv[1]], start_new_session=True)", marker]).wait()
http.server.HTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler).serve_forever()
'''

# The test process: starts the server through the fixtures' own context manager, says so, waits.
PARENT = '''
import sys, time
from pathlib import Path
from tests.helpers.real_servers import _process
marker, port, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])
with _process([sys.executable, "-c", sys.argv[4], marker, port], f"http://127.0.0.1:{port}/", folder / "server.log", 120):
    print("ready", flush=True)
    while True:
        time.sleep(60)
'''


def marked(marker: str) -> list[int]:
    """The live processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes() and alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def test_a_fixture_server_and_what_it_detached_end_when_the_test_process_is_killed(tmp_path: Path) -> None:
    marker = f"fixture-server-{uuid.uuid4().hex}"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, marker, str(free_port()), str(tmp_path), SERVER],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == "ready\n"
        # This process, the keeper, the server and its detached daemon (in a session of its own).
        wait_for(lambda: len(marked(marker)) == 4, "the keeper, the server and its daemon", timeout=60)
        daemon = [pid for pid in marked(marker) if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[2]
                  == b"import time\nwhile True: time.sleep(60)"]
        assert len(daemon) == 1 and os.getsid(daemon[0]) == daemon[0]
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_for(lambda: not marked(marker), "every process the fixture started to end", timeout=60)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
