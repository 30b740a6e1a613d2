"""A password in a base URL (`http://user:password@host/v1`) and a key pasted where a name or a
URL goes never reach any output: manifest.json, run.json, the transcript, the eval's
announcement, `maps config`, error lines. The URL's user information still authenticates the
requests (HTTP basic auth, as httpx sends it)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from maps_autogen._util._redact import looks_like_key, mask_url_userinfo, redact
from tests.helpers.common import all_text_in, clean_env, critic_json, make_png, run_maps, solver_json
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, RoleScript

PASSWORD = "pw-Rt7q!x9Lm"  # short of a key's shape: only its place in the URL gives it away
PASTED = "sk-proj-9Zt4Wq2Lr8Xn5Vb1Kc7Hd3Fg"


def with_userinfo(base_url: str, user: str = "lab", password: str = PASSWORD) -> str:
    return base_url.replace("http://", f"http://{user}:{password}@")


def test_a_password_in_the_base_url_is_masked_in_every_output_of_solve_config_and_eval(tmp_path: Path) -> None:
    png = make_png(tmp_path / "lever.png")
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    answers = ProblemScript({pid: "B" if row["question_type"] == "multi_choice" else row["answer"]
                             for pid, row in rows.items()})
    solve_script = RoleScript({"interpreter": ["CAPTION"], "solver": [solver_json("A")], "critic": [critic_json()]})
    with FakeOpenAI(lambda request: answers(request) if "[q:" in request.user_text() else solve_script(request)) \
            as server:
        url = with_userinfo(server.base_url)
        (tmp_path / "agents.yaml").write_text(
            f"endpoints:\n  lab:\n    kind: openai\n    base_url: '{url}'\n    api_key_env: null\n"
            "    default_model: lab-model\n")
        env = clean_env()
        solved = run_maps(["solve", str(png), "-q", "Which mass?", "--runs-dir", str(tmp_path / "runs")], env=env,
                          cwd=tmp_path)
        shown = run_maps(["config"], env=env, cwd=tmp_path)
        evaluated = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"),
                              "--method", "direct"], env=env, cwd=tmp_path)
        received = [request for request in server.received if request.method == "POST"]
    assert solved.returncode == 0, solved.stderr
    assert shown.returncode == 0 and evaluated.returncode == 0, shown.stderr + evaluated.stderr
    # The user information still authenticates every request.
    basic = "Basic " + base64.b64encode(f"lab:{PASSWORD}".encode()).decode()
    assert received and {request.headers.get("authorization") for request in received} == {basic}
    outputs = (solved.stdout + solved.stderr + shown.stdout + shown.stderr + evaluated.stdout + evaluated.stderr
               + all_text_in(tmp_path / "runs"))
    assert PASSWORD not in outputs and f"lab:{PASSWORD[:4]}" not in outputs
    masked = mask_url_userinfo(url)
    assert masked == server.base_url.replace("http://", "http://***@")
    assert masked in shown.stdout  # maps config: the endpoint and the model each step would use
    assert f"using lab-model at {masked}" in evaluated.stdout + evaluated.stderr  # the eval's announcement
    (eval_dir,) = list((tmp_path / "runs").glob("eval-*"))
    manifest = json.loads((eval_dir / "manifest.json").read_text())
    assert {entry["base_url"] for entry in manifest["models"].values()} == {masked}
    solve_dir = next(p for p in (tmp_path / "runs").iterdir() if p.name.startswith("solve"))
    assert json.loads((solve_dir / "run.json").read_text())["models"]["solver"]["base_url"] == masked
    # and a resume sees the same settings (the masked URL both times)
    resumed = run_maps(["eval", "mathvista", "--resume", str(eval_dir)], env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert PASSWORD not in resumed.stdout + resumed.stderr


def test_a_password_in_the_url_is_masked_wherever_it_shows_alone() -> None:
    # Registered when the endpoint resolves: the password on its own is masked too.
    from maps_autogen._util._redact import register_url_secrets

    register_url_secrets("http://someone:pw-only-9Qz1@host/v1")
    assert redact("the proxy said: bad password pw-only-9Qz1") == "the proxy said: bad password ***"
    assert redact("see https://user:anything@host:8080/v1 and ftp://x@y") == "see https://***@host:8080/v1 and ftp://***@y"
    assert redact("mail me at someone@example.org, http://host/a?b=c@d") == (
        "mail me at someone@example.org, http://host/a?b=c@d")  # not user information


def test_masking_user_information_is_linear_on_adversarial_text() -> None:
    hostile = "://" * 200_000 + "a@" * 200_000 + "http://" + "x" * 200_000
    assert mask_url_userinfo(hostile).count("***") == 1  # a one-pass scan (this would take minutes if quadratic)


@pytest.mark.parametrize("value", [PASTED, "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStU", "hf_aB3dE5gH7jK9mN1pQ3sT5vW7yZ"])
def test_key_shapes_are_recognised(value: str) -> None:
    assert looks_like_key(value) and looks_like_key(f"openai:{value}")


@pytest.mark.parametrize("value", ["deepseek-r1-distill-qwen-32b", "OPENAI_API_KEY", "gpt-4o-2024-08-06",
                                   "Qwen/Qwen2.5-VL-7B-Instruct", "task-specific-model-2024"])
def test_names_are_not_taken_for_keys(value: str) -> None:
    assert not looks_like_key(value)


@pytest.mark.parametrize("endpoint, says", [
    ({"api_key_env": PASTED}, "is the NAME of the environment variable that holds the key"),
    ({"base_url": PASTED}, "holds what looks like an API key, not a URL"),
    ({"base_url": f"http://127.0.0.1:9/{PASTED}/v1"}, "holds what looks like an API key, not a URL"),
    ({"default_model": PASTED}, None),  # runs far enough to be shown
])
def test_a_key_pasted_where_a_name_or_url_goes_is_never_printed(tmp_path: Path, endpoint: dict, says: str | None) -> None:
    settings = {"kind": "openai", "api_key_env": None, "base_url": "http://127.0.0.1:9/v1", **endpoint}
    (tmp_path / "agents.yaml").write_text(json.dumps({"endpoints": {"lab": settings}}))
    result = run_maps(["config"], env=clean_env(), cwd=tmp_path)
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    if says is not None:
        assert result.returncode == 2 and says in output
    else:
        assert result.returncode == 0 and "***" in output
    assert PASTED not in output and PASTED[3:15] not in output


def test_a_key_pasted_as_the_model_on_the_command_line_is_never_printed(tmp_path: Path) -> None:
    result = run_maps(["config", "--model", PASTED], env=clean_env(), cwd=tmp_path)
    output = result.stdout + result.stderr
    assert "Traceback" not in output and PASTED not in output and PASTED[3:15] not in output


def test_a_credential_in_an_endpoints_headers_or_query_is_never_printed(tmp_path: Path) -> None:
    header_secret, query_secret = "gw-h3ad3r-s3cr3t-v4lue", "qs-qu3ry-s3cr3t-v4lue"
    endpoint = {"kind": "openai", "api_key_env": None, "base_url": "http://127.0.0.1:9/v1",
                "headers": {"X-Api-Key": header_secret, "X-Title": "maps"}, "query": {"token": query_secret}}
    (tmp_path / "agents.yaml").write_text(json.dumps({"endpoints": {"gateway": endpoint}}))
    listing = tmp_path / "list.json"
    listing.write_text(json.dumps([{"model": "m", "base_url": "http://127.0.0.1:9/v1",
                                    "default_headers": {"Authorization-Extra": header_secret + "-2"}}]))
    shown = run_maps(["config"], env=clean_env(), cwd=tmp_path)
    listed = run_maps(["config", "--config-list", str(listing)], env=clean_env(OPENAI_API_KEY="x" * 20), cwd=tmp_path)
    assert shown.returncode == 0 and listed.returncode == 0, shown.stderr + listed.stderr
    output = shown.stdout + shown.stderr + listed.stdout + listed.stderr
    assert header_secret not in output and query_secret not in output
    assert "X-Title: maps" in shown.stdout  # what is not a credential is shown
