"""Inspect's log holds no secret in any encoding: the MAPS solver hands Inspect only what it needs
to record (benchmark, method, steps left out, the config's path and the team's step names, never
the loaded configuration with its headers, query credentials and extra_body fields), and a
reply that echoes a key (the provider's own, Inspect's Bearer, or a config's credentials) is
masked in the log Inspect wrote, read back with Inspect's own reader, in both log formats."""

from __future__ import annotations

import asyncio
import base64
import fcntl
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from maps_autogen._util import register_secret
from tests.helpers.common import TEST_KEY, clean_env, echoing, write_config
from tests.helpers.eval_fixtures import write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received

if os.environ.get("CI") == "true":  # CI installs the inspect extra (scripts/setup.sh): missing is a failure
    from inspect_ai.log import read_eval_log
else:
    read_eval_log = pytest.importorskip("inspect_ai.log").read_eval_log

INSPECT = Path(sys.executable).parent / "inspect"
HEADER_TOKEN = "hdr-token-91ab82cd73ef64"
QUERY_KEY = "qk+Zx81/Lm04Np=Qr7"
BODY_SECRET = "body-secret-5e6f7a8b9c0d"
PASSWORD = "p@ss/Word+9876-xyz"
SECRETS = (TEST_KEY, HEADER_TOKEN, QUERY_KEY, BODY_SECRET, PASSWORD)


def forms(secret: str) -> list[str]:
    return [secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret),
            base64.b64encode(secret.encode()).decode(), base64.b64encode(f"user:{secret}".encode()).decode()]


def echo(request: Received) -> str:
    """A gateway (or a model repeating its prompt) echoing the key it got and every secret."""
    return f"echo {request.headers.get('authorization')} {' '.join(SECRETS)} " + " ".join(
        base64.b64encode(f"user:{secret}".encode()).decode() for secret in SECRETS)


@pytest.mark.parametrize("log_format", ["json", "eval"])
def test_inspect_s_log_holds_no_secret_in_any_encoding(tmp_path: Path, log_format: str) -> None:
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 1)
    config = write_config(tmp_path / "agents.yaml", **{
        "endpoints.gateway": {"kind": "openai", "api_key_env": None,
                              "base_url": f"http://user:{urllib.parse.quote(PASSWORD, safe='')}@gateway.example/v1"
                                          f"?api-key={urllib.parse.quote(QUERY_KEY, safe='')}",
                              "headers": {"X-Gateway-Token": HEADER_TOKEN},
                              "extra_body": {"user_secret": BODY_SECRET}},
        "model.endpoint": "gateway"})
    logs = tmp_path / "logs"
    with FakeOpenAI(echoing(echo)) as server:
        env = {key: value for key, value in clean_env(FAKE_BASE_URL=server.base_url, FAKE_API_KEY=TEST_KEY).items()
               if not key.startswith("INSPECT_")}
        result = subprocess.run([str(INSPECT), "eval", "maps_autogen/mathvista", "-T", f"data={data}", "-T",
                                 f"config={config}", "--model", "openai-api/fake/fake-model", "--log-dir", str(logs),
                                 "--log-format", log_format, "--display", "none"],
                                env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        received = list(server.received)
    assert result.returncode == 0, result.stdout + result.stderr
    assert any(r.headers.get("authorization") == f"Bearer {TEST_KEY}" for r in received)  # the key was sent, and echoed
    (log_file,) = logs.glob(f"*.{log_format}")
    log = read_eval_log(str(log_file), resolve_attachments=True)
    assert log.status == "success"
    text = log.model_dump_json()
    assert "echo Bearer ***" in text  # the echo is in the log, masked
    for secret in SECRETS:
        for form in forms(secret):
            assert form not in text, (secret, form)
    if log_format == "json":
        raw = log_file.read_text()
        assert not any(form in raw for secret in SECRETS for form in forms(secret))
    (step,) = log.plan.steps
    assert set(step.params) == {"benchmark", "method", "without", "config", "team"}, step.params
    assert step.params["config"] == str(config) and step.params["method"] == "maps"
    (scorer,) = log.eval.scorers or []
    assert scorer.options == {"benchmark": "mathvista", "rules": "current"}  # never the data set's rows


@pytest.mark.parametrize("log_format", ["json", "eval"])
def test_the_log_is_masked_through_a_temporary_inspect_never_lists(
    tmp_path: Path, log_format: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the masked log is written (and after a writer killed mid-way), its temporary is
    named and locked as our own (_util/_temporaries.py: the next write sweeps a dead one), never
    named like a log Inspect lists."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log._file import is_log_file
    from inspect_ai.model import ModelOutput, get_model

    import maps_autogen.inspect_tasks._log_secrets as log_secrets
    from maps_autogen._util._temporaries import _pattern

    secret = "tmp-log-secret-4d5e6f7a8b9c"
    model = get_model("mockllm/model", custom_outputs=[ModelOutput.from_content("mockllm/model", f"echo {secret}")])
    (log,) = inspect_eval(Task(dataset=[Sample(input="x", target="y")]), model=model, log_dir=str(tmp_path),
                          log_format=log_format, display="none")
    register_secret(secret)
    path = Path(log.location)
    written = []
    real_writer = log_secrets.write_eval_log_async

    async def watched(masked: object, location: str, format: str) -> object:
        temp = Path(location)
        assert not is_log_file(temp.name, [".json", ".eval"]), temp.name
        assert temp.parent == path.parent and _pattern(path.name).fullmatch(temp.name), temp.name
        with open(temp, "rb+") as other:  # the writer's lock is held: no sweep takes it
            with pytest.raises(BlockingIOError):
                fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        written.append(temp)
        return await real_writer(masked, location, format=format)  # type: ignore[arg-type]

    monkeypatch.setattr(log_secrets, "write_eval_log_async", watched)
    assert asyncio.run(log_secrets.mask_log(str(path))) is True
    assert written and sorted(path.parent.iterdir()) == [path]
    assert secret not in read_eval_log(str(path)).model_dump_json()
