"""A run reports exactly what ran (`maps solve`): incomplete replies never count, each role's own
settings go on the wire and are recorded as sent, no silent model substitution, any Retry-After
is handled, every request has an overall deadline, Ctrl-C leaves an honest run.json."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from pathlib import Path

from tests.helpers.common import MAPS, TEST_KEY, clean_env, critic_json, run_maps, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript
from tests.helpers.solve_errors import assert_one_line_error


def healthy(**overrides: list[Reply | str]) -> RoleScript:
    return RoleScript({"solver": [solver_json("A")], "critic": [critic_json()], **overrides})


def solve(png: Path, tmp_path: Path, server: FakeOpenAI, *extra: str, env: dict[str, str] | None = None):
    env = env or clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
    return run_maps(["solve", str(png), "-q", "x", "--runs-dir", str(tmp_path / "runs"), *extra], env=env, cwd=tmp_path)


def transcript(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]


def only_run(tmp_path: Path) -> Path:
    (run_dir,) = list((tmp_path / "runs").iterdir())
    return run_dir


def test_a_stream_cut_off_before_its_end_is_retried_and_then_fails(png: Path, tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True, "endpoints.openai.max_retries": 1})
    cut = Reply("interpreting the lever diagram in detail", cut_after=1)  # the client sees "interpre"
    with FakeOpenAI(healthy(interpreter=[cut])) as server:
        result = solve(png, tmp_path, server)
        assert server.roles() == ["interpreter", "interpreter"]  # retried once, never passed on
    assert_one_line_error(result, 1, "incomplete", "gave up after 2 attempts")
    run = json.loads((only_run(tmp_path) / "run.json").read_text())
    assert run["stop_reason"] == "error" and run["final_answer"] == ""
    assert not [r for r in transcript(only_run(tmp_path)) if r.get("role") == "interpreter"]


def test_a_cut_stream_is_retried_and_the_complete_reply_is_used(png: Path, tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True, "endpoints.openai.max_retries": 1})
    script = healthy(interpreter=[Reply("interpreting the lever diagram", cut_after=1), Reply("CAPTION: a lever")])
    with FakeOpenAI(script) as server:
        result = solve(png, tmp_path, server, "--json")
    assert result.returncode == 0, result.stderr
    interpreter = next(r for r in transcript(only_run(tmp_path)) if r.get("role") == "interpreter")
    assert interpreter["content"] == "CAPTION: a lever" and interpreter["usage"]["attempts"] == 2
    assert interpreter["finish_reason"] == "stop"


def test_a_reply_cut_at_max_tokens_is_recorded_on_the_turn_and_shown(png: Path, tmp_path: Path) -> None:
    with FakeOpenAI(healthy(scholar=[Reply("Torques balance, so the unknown mass", finish_reason="length")])) as server:
        result = solve(png, tmp_path, server)
    assert result.returncode == 0, result.stderr
    assert "the Scholar's reply was cut off at max_tokens (4096)" in result.stdout  # the default team's Scholar budget
    records = transcript(only_run(tmp_path))
    scholar = next(r for r in records if r.get("role") == "scholar" and r.get("type") == "message")
    assert scholar["finish_reason"] == "length"
    assert any(r.get("event") == "max_tokens_reached" and r.get("role") == "scholar" for r in records)
    aligner = next(r for r in records if r.get("role") == "aligner" and r.get("type") == "message")
    assert aligner["finish_reason"] == "stop"


def test_each_role_sends_its_own_settings_and_the_run_records_what_was_sent(png: Path, tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"team.steps.3.model": {"endpoint": "auto", "temperature": 1.5, "max_tokens": 77}})
    script = healthy(scholar=[Reply("KNOW", model="gpt-4o-2024-08-06")])
    with FakeOpenAI(script) as server:
        result = solve(png, tmp_path, server, "--json")
        sent = {r.role: (r.body.get("temperature"), r.body.get("max_tokens")) for r in server.received}
    assert result.returncode == 0, result.stderr
    assert sent == {"interpreter": (0.0, 3072), "aligner": (0.0, 3072), "scholar": (0.0, 4096),  # the default team's budgets
                    "solver": (1.5, 77), "critic": (0.0, 2048)}
    models = json.loads((only_run(tmp_path) / "run.json").read_text())["models"]
    assert models["solver"]["sent"]["temperature"] == 1.5 and models["solver"]["sent"]["max_tokens"] == 77
    assert models["critic"]["sent"]["temperature"] == 0.0 and models["critic"]["sent"]["max_tokens"] == 2048
    assert models["scholar"]["served_model"] == "gpt-4o-2024-08-06" and "served_model" not in models["aligner"]


def test_a_named_model_without_a_key_is_an_error_not_the_embedded_model(png: Path, tmp_path: Path) -> None:
    result = run_maps(["solve", str(png), "-q", "x", "--model", "gpt-4o", "--runs-dir", str(tmp_path / "runs")],
                      env=clean_env(), cwd=tmp_path)
    assert_one_line_error(result, 2, "model 'gpt-4o' was asked for", "OPENAI_API_KEY", "--model local")
    assert "embedded" not in result.stderr.split("error:")[0]  # nothing was announced or started
    assert not (tmp_path / "runs").exists()


def test_openai_base_url_without_a_key_is_used_without_one(png: Path, tmp_path: Path) -> None:
    with FakeOpenAI(healthy()) as server:
        result = solve(png, tmp_path, server, env=clean_env(OPENAI_BASE_URL=server.base_url))
        headers = [r.headers for r in server.received]
    assert result.returncode == 0, result.stderr
    assert len(headers) == 5 and all("authorization" not in h for h in headers)
    assert f"using gpt-4o at {server.base_url} (OPENAI_BASE_URL is set)" in result.stderr


def test_any_retry_after_value_is_handled(png: Path, tmp_path: Path) -> None:
    bad = [Reply("busy", status=429, headers={"Retry-After": "soon"}), Reply("busy", status=503, headers={"Retry-After": ""}),
           Reply("ALIGNED")]
    with FakeOpenAI(healthy(aligner=bad)) as server:
        result = solve(png, tmp_path, server, "--quiet")
        assert server.roles().count("aligner") == 3
    assert result.returncode == 0 and result.stdout == "A\n", result.stderr
    assert "Traceback" not in result.stderr


def test_a_service_trickling_its_reply_hits_the_overall_deadline(png: Path, tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.timeout_s": 1, "endpoints.openai.max_retries": 0})
    # Every read gets bytes within 0.3 s, so only an overall deadline ends the request.
    with FakeOpenAI(healthy(interpreter=[Reply("CAPTION " * 40, trickle_s=0.3)])) as server:
        result = solve(png, tmp_path, server)
    assert_one_line_error(result, 1, "did not answer within 1s")


def test_ctrl_c_in_solve_records_interrupted_and_keeps_finished_turns(png: Path, tmp_path: Path) -> None:
    replies = healthy(scholar=["KNOW"])
    reached, released = threading.Event(), threading.Event()

    def script(request: Received) -> Reply:
        if request.role == "scholar":  # the Scholar's reply waits until the Ctrl-C is sent
            reached.set()
            released.wait(120)
        return replies(request)

    runs = tmp_path / "runs"
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        process = subprocess.Popen([*MAPS, "solve", str(png), "-q", "x", "--runs-dir", str(runs), "--quiet"], env=env, cwd=tmp_path,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert reached.wait(120), "the chat never reached the Scholar"
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
        finally:
            released.set()
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    run_dir = only_run(tmp_path)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "interrupted" and run["stop_reason"] == "interrupted"
    records = transcript(run_dir)
    assert [r["role"] for r in records if r.get("type") == "message"] == ["user_proxy", "interpreter", "aligner"]
    assert records[-1]["event"] == "stop" and records[-1]["stop_reason"] == "interrupted"
