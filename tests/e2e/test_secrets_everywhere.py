"""One registry of secrets, fed from every place a credential can live (a base URL's user
information and `?api-key=` query, an endpoint's headers and extra_body fields named like
credentials, a config list's), masked in every encoding it travels in (as itself, URL-encoded as
a query string carries it, base64 as `Authorization: Basic` carries `user:password`) in every
file and every line a command writes, against a scripted gateway that echoes everything it
receives (its replies, and its error lines); and a key pasted where a name or a path goes
(`--team`, `--without`, any option) is never echoed."""

from __future__ import annotations

import base64
import json
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import clean_env, echoing, run_maps, write_config
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply

USER = "maps-user"
PASSWORD = "p@ss/word+Secret-0123"  # written percent-encoded in the URL; sent decoded, as Basic
QUERY_KEY = "qk+7f3c/9a1e=5b2d4c6a"  # ?api-key=, as Azure and some gateways take it
HEADER_TOKEN = "hdr-token-5a6b7c8d9e0f1a2b"
BODY_SECRET = "body-secret-1b2c3d4e5f6a"
LIST_KEY = "list-key-0f9e8d7c6b5a4938"
LIST_PASSWORD = "list-pw-Zq81/Lm+Np"
PASTED = "sk-proj-AbCdEf0123456789GhIjKl"  # a key pasted where a name or a path goes
SECRETS = (PASSWORD, QUERY_KEY, HEADER_TOKEN, BODY_SECRET, LIST_KEY, LIST_PASSWORD, PASTED)


def every_encoding(secret: str) -> list[str]:
    """The forms a secret is looked for in: itself, URL-encoded, base64 of it, and base64 of
    `user:` + it (Basic) at every alignment."""
    forms = [secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret),
             base64.b64encode(secret.encode()).decode(), base64.urlsafe_b64encode(secret.encode()).decode()]
    for user in (USER, "u", "us", "list-user"):
        forms.append(base64.b64encode(f"{user}:{secret}".encode()).decode())
    return forms


def echo(request: Received) -> str:
    """What a leaky gateway sends back: the request's headers, its URL and its body fields."""
    return (f"echo auth={request.headers.get('authorization')} path={request.path} "
            f"gateway={request.headers.get('x-gateway-token')} list={request.headers.get('x-api-token')} "
            f"body={request.body.get('user_secret')} {request.body.get('client_secret')}")


def assert_nowhere(texts: dict[str, str | bytes]) -> None:
    for where, text in texts.items():
        data = text.encode() if isinstance(text, str) else text
        for secret in SECRETS:
            for form in every_encoding(secret):
                assert form.encode() not in data, (where, secret, form)


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Solves through a gateway that echoes everything (one reply, one error), by agents.yaml
    and by a config list; `maps config`, `maps view`; and every file they wrote."""
    base = tmp_path_factory.mktemp("leaky")
    runs = base / "runs"
    outputs: dict[str, subprocess.CompletedProcess[str]] = {}
    received: list[Received] = []
    with FakeOpenAI(echoing(echo)) as server:
        host = server.base_url.split("://", 1)[1]
        url = (f"http://{USER}:{urllib.parse.quote(PASSWORD, safe='')}@{host}"
               f"?api-key={urllib.parse.quote(QUERY_KEY, safe='')}")
        (base / "cfg").mkdir()
        config = write_config(base / "cfg" / "agents.yaml", **{
            "endpoints.gateway": {"kind": "openai", "base_url": url, "api_key_env": None,
                                  "headers": {"X-Gateway-Token": HEADER_TOKEN},
                                  "extra_body": {"user_secret": BODY_SECRET, "top_k": 5}},
            "model.endpoint": "gateway"})
        entries = [{"model": "listed-model", "api_key": LIST_KEY,
                    "base_url": f"http://list-user:{urllib.parse.quote(LIST_PASSWORD, safe='')}@{host}",
                    "default_headers": {"X-Api-Token": LIST_KEY}, "extra_body": {"client_secret": LIST_PASSWORD}}]
        env = clean_env(OAI_CONFIG_LIST=json.dumps(entries))
        solve = ["solve", "-q", "What is 6*7?", "--runs-dir", str(runs)]
        outputs["solve"] = run_maps([*solve, "--config", str(config)], env=env, cwd=base)
        outputs["solve --json"] = run_maps([*solve, "--config", str(config), "--json"], env=env, cwd=base)
        outputs["config list"] = run_maps([*solve, "--config-list", "OAI_CONFIG_LIST", "--model", "listed-model",
                                           "--quiet"], env=env, cwd=base)
        outputs["config"] = run_maps(["config", "--config", str(config)], env=env, cwd=base)
        received += server.received
        server.script = lambda request: Reply(f"bad request: {echo(request)}", status=400)
        outputs["error"] = run_maps([*solve, "--config", str(config), "--quiet"], env=env, cwd=base)
    for run in sorted(runs.iterdir()):
        outputs[f"view {run.name}"] = run_maps(["view", str(run)], env=env, cwd=base)
    return {"runs": runs, "outputs": outputs, "received": received}


def test_the_gateway_received_every_credential_and_echoed_it(leaky: dict[str, Any]) -> None:
    """The evidence that each credential was sent (so each echo really carried it)."""
    received: list[Received] = leaky["received"]
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert any(r.headers.get("authorization") == basic for r in received)
    assert any(r.query.get("api-key") == QUERY_KEY for r in received)
    assert any(r.headers.get("x-gateway-token") == HEADER_TOKEN for r in received)
    assert any(r.body.get("user_secret") == BODY_SECRET for r in received)
    outputs = leaky["outputs"]
    assert any(r.headers.get("x-api-token") == LIST_KEY and r.body.get("client_secret") == LIST_PASSWORD
               for r in received), outputs["config list"].stderr
    for name in ("solve", "solve --json", "config list", "config"):
        assert outputs[name].returncode == 0, (name, outputs[name].stderr[-2000:])
    assert outputs["error"].returncode == 1
    assert "bad request: echo auth=Basic ***" in outputs["error"].stderr  # the echo reached the error line, masked


def test_no_credential_in_any_encoding_in_any_file_or_output(leaky: dict[str, Any]) -> None:
    runs: Path = leaky["runs"]
    files = {str(path): path.read_bytes() for path in runs.rglob("*") if path.is_file()}
    assert {"run.json", "transcript.jsonl", "view.html"} <= {Path(p).name for p in files}
    assert_nowhere(files)
    assert_nowhere({f"{name} {stream}": getattr(result, stream) for name, result in leaky["outputs"].items()
                    for stream in ("stdout", "stderr")})
    # The record shows what was sent, the credentials masked: the extra_body field, the query.
    records = [json.loads(path.read_text()) for path in runs.glob("*/run.json")]
    sent = [model["sent"] for record in records for model in record["models"].values() if "sent" in model]
    assert {"user_secret": "***", "top_k": 5} in [{k: s.get(k) for k in ("user_secret", "top_k")} for s in sent]
    assert {"***"} == {s["query"]["api-key"] for s in sent if "query" in s}
    assert {"***"} == {s["client_secret"] for s in sent if "client_secret" in s}


@pytest.mark.parametrize("args", [
    ["solve", "-q", "x", "--team", PASTED],
    ["solve", "-q", "x", "--without", PASTED],
    ["eval", "custom", "--data", "data.jsonl", "--without", PASTED],
    ["eval", "custom", "--data", "data.jsonl", "--subset", PASTED],
    ["eval", "custom", "--data", "data.jsonl", "--concurrency", PASTED],
    ["eval", "custom", "--data", "data.jsonl", "--shard", PASTED],
    ["view", PASTED],
])
def test_a_key_pasted_into_an_option_is_never_echoed(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "a", "question": "1+1?", "answer": "2"}) + "\n")
    result = run_maps(args, env=clean_env(OPENAI_API_KEY="sk-test-0123456789-secret",
                                          OPENAI_BASE_URL="http://127.0.0.1:9/v1"), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "***" in result.stdout + result.stderr, result.stderr
    assert_nowhere({"stdout": result.stdout, "stderr": result.stderr})


def test_every_encoding_is_derived_from_the_one_registration() -> None:
    from maps_autogen._util._redact import encodings, redact, register_secret

    register_secret(BODY_SECRET)
    for form in every_encoding(BODY_SECRET):
        assert form not in redact(f"seen: {form} end"), form
    assert {urllib.parse.quote(QUERY_KEY, safe=""), urllib.parse.quote_plus(QUERY_KEY)} <= encodings(QUERY_KEY)
