"""`maps serve MODEL.gguf`: llama.cpp's server from the xllamacpp wheel maps installs, on a model
file of one's own, as the docs' recipe starts it: it says where it serves and the context each
request gets (read back from the server), the lines it prints point `maps` at it as written, and
it stops on SIGTERM as on Ctrl-C, its server child with it. A missing or broken file is one line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.helpers.common import MAPS, REPO, clean_env, run_maps
from tests.helpers.real_servers import model_file


def test_a_missing_or_broken_model_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.gguf").write_text("not a model")
    for path, said in ((tmp_path / "none.gguf", "does not exist"), (tmp_path / "notes.gguf", "not a readable GGUF")):
        result = run_maps(["serve", str(path)], env=clean_env(), cwd=tmp_path)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: model file {path} ") and said in line


def connections_to(pid: int, port: int) -> int:
    """The TCP sockets process `pid` holds to `port`, in any state (read from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target.removeprefix("socket:[").removesuffix("]"))
    lines = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    return sum(1 for fields in map(str.split, lines) if fields[9] in inodes and int(fields[2].split(":")[1], 16) == port)


@pytest.mark.local
def test_maps_serve_says_the_context_and_the_lines_that_use_it(tmp_path: Path) -> None:
    server = subprocess.Popen([*MAPS, "serve", str(model_file()), "--port", "0", "--ctx-size", "2048", "--parallel", "2",
                               "--alias", "smol"], env=clean_env(), cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()  # said once it serves
        found = re.match(r"serving smol at (http://127\.0\.0\.1:\d+/v1): 1,024 tokens per request \(said by llama\.cpp's "
                         r"GET /props, default_generation_settings\.n_ctx\); Ctrl-C stops it", first)
        assert found, first + server.stderr.read() if server.poll() is not None else first
        url = found.group(1)
        # the context was asked once: no connection of maps serve's own is left open to its server
        assert connections_to(server.pid, int(url.rsplit(":", 1)[1].removesuffix("/v1"))) == 0
        lines = [server.stdout.readline().strip() for _ in range(3)]
        assert lines[1] == f"export OPENAI_BASE_URL={url}"
        assert lines[2] == "maps solve --problem examples/lever/problem.yaml --model smol --config examples/text-only.yaml"
        # the printed lines, as written from the repository's root, reach it: its context is read
        # before the first call, and a team whose requests cannot fit 1,024 tokens is refused with
        # the fix, nothing sent
        (tmp_path / "examples").symlink_to(REPO / "examples")
        solve = run_maps(lines[2].split()[1:], env=clean_env(OPENAI_BASE_URL=url), cwd=tmp_path)
        assert solve.returncode == 2, solve.stderr
        (error,) = solve.stderr.splitlines()
        assert "serves smol with a context of 1,024 tokens per request (said by llama.cpp's GET /props" in error
        assert "--ctx-size" in error and not (tmp_path / "runs").exists()
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(60)
    assert code == 0 and "stopped" in server.stderr.read()
    with pytest.raises(httpx.ConnectError):  # its server child stopped with it
        httpx.get(f"{url.removesuffix('/v1')}/health", timeout=5)
