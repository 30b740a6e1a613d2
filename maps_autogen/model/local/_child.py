"""The server child: `python -m maps_autogen.model.local._child --serve`, started by LocalServer.

It reads its launch plan from stdin, runs llama.cpp's server (xllamacpp), reports its address on
a private handshake channel, and exits when stdin reaches EOF, on SIGTERM, or when its parent
dies (_util/_lifeline.py). It imports only the standard library, xllamacpp and maps_autogen._util._lifeline
(not the config or httpx), so it starts fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from typing import IO, Any

from maps_autogen._util import ParentLink, bind_to_parent

HOST = "127.0.0.1"  # the server listens on loopback only



def _build_params(xllamacpp: Any, plan: dict[str, Any]) -> Any:
    """xllamacpp.CommonParams for the plan."""
    params = xllamacpp.CommonParams()
    params.model.path = plan["model_path"]
    if plan["mmproj_path"]:
        params.mmproj.path = plan["mmproj_path"]
    params.n_ctx = plan["n_ctx"]
    params.n_predict = plan["n_predict"]
    # One slot by default: the whole context for one conversation, requests queue (`maps serve
    # --parallel N`: N slots share it, each request holding n_ctx / N).
    params.n_parallel = plan.get("n_parallel", 1)
    params.cpuparams.n_threads = plan["n_threads"]
    params.cpuparams_batch.n_threads = plan["n_threads"]
    # Waiting threads sleep instead of spinning (poll 50 by default): on a busy machine spinning
    # threads steal the CPU from the one doing the work (measured 5-18 vs 43 tokens/s).
    params.cpuparams.poll = 0
    params.cpuparams_batch.poll = 0
    params.use_jinja = True
    params.chat_template = plan["chat_template"]
    params.hostnames = [HOST]
    params.port = plan["port"]
    # A set: assigning a str would make one alias per character.
    params.model_alias = {plan["model_name"]}
    return params


def _send(channel: IO[str], message: dict[str, Any]) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


# The temporary log to remove when we stop (the plan's `delete_log`), once the plan is read.
_delete_on_stop: list[str] = []


def _stop(signum: int, frame: object) -> None:
    """SIGTERM (the parent stops us, or died: our parent-death signal): remove a temporary log
    and exit at once (see the ~Server note below)."""
    for path in _delete_on_stop:
        with contextlib.suppress(OSError):
            os.unlink(path)
    os._exit(0)


def _serve_main(parent: ParentLink) -> int:
    """Run the server until stdin reaches EOF (the parent stopped us or died) or SIGTERM."""
    # The parent decides when we stop; we are in our own session, this is belt and braces.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    # Dead with the parent, also while llama.cpp loads the model (stdin is read only after).
    bind_to_parent(parent, signal.SIGTERM)
    # Keep the real stdout as a private handshake channel; anything native code prints goes
    # to stderr (the log file) instead of corrupting it.
    handshake = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    stdin = sys.stdin.buffer
    plan = json.loads(stdin.readline())
    if plan["delete_log"]:
        _delete_on_stop.append(plan["delete_log"])
    try:
        import xllamacpp

        server = xllamacpp.Server(_build_params(xllamacpp, plan))
    except Exception as error:  # noqa: BLE001 - reported to the parent (xllamacpp raises a generic RuntimeError)
        _send(handshake, {"ok": False, "error": str(error)})
        sys.stderr.flush()
        os._exit(3)  # skip interpreter teardown: see the ~Server note below
    _send(handshake, {"ok": True, "address": server.listening_address, "pid": os.getpid()})
    while stdin.read(65536):  # blocks; returns b"" at EOF
        pass
    if plan["delete_log"]:
        # EOF means a normal stop, or the parent died without cleaning up (SIGKILL): either
        # way nothing went wrong here, so do not leave a temporary log behind.
        with contextlib.suppress(OSError):
            os.unlink(plan["delete_log"])
    # Exit at once, never running ~Server: it first finishes any reply being generated
    # (seconds), and in-process it hung interpreter exit in 1 of 20 runs ("waiting for main
    # loop exit"). There is nothing to save; the OS frees the model and closes the socket.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1:3] == ["--serve", "--parent"]:
        sys.exit(_serve_main(ParentLink.from_argv(sys.argv[3:])))
    sys.exit("usage: python -m maps_autogen.model.local._child --serve --parent PID METHOD FD (internal: started by "
             "LocalServer)")
