"""What the perf scripts' fake HTTP services share: an aiohttp app served in its own process on a
free port (printed on stdout) until the parent closes its stdin, and the parent's side of that."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any


def serve_until_stdin_closes(app: Any, backlog: int = 2048) -> None:
    """Serve `app` on 127.0.0.1 at a free port, print the port, stop when stdin closes."""
    from aiohttp import web

    async def run() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=backlog).start()
        print(runner.addresses[0][1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await runner.cleanup()

    asyncio.run(run())


def spawn_service(script: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    """Start `python script *args` (a service serving with `serve_until_stdin_closes`); the
    process and its base URL."""
    process = subprocess.Popen([sys.executable, script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    port = process.stdout.readline().strip()  # type: ignore[union-attr]
    if not port:
        sys.exit(f"a fake service ({' '.join(args[:1])}) did not start (is aiohttp installed? make setup installs it)")
    return process, f"http://127.0.0.1:{port}"


def stop_service(process: subprocess.Popen[str]) -> None:
    """Close its stdin (it stops) and wait for it, unless it is gone already."""
    if process.poll() is None:
        process.stdin.close()  # type: ignore[union-attr]
        process.wait(timeout=30)
