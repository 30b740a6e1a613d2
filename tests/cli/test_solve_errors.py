"""Bad input and model-service faults: one-line errors, the right exit codes, no traceback,
no secret anywhere, finished work kept."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.helpers.common import TEST_KEY, all_text_in, clean_env, critic_json, run_maps, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, Reply, RoleScript
from tests.helpers.solve_errors import assert_one_line_error


def env_for(server: FakeOpenAI | None = None) -> dict[str, str]:
    if server is None:
        return clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    return clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)


def test_missing_image(tmp_path: Path) -> None:
    result = run_maps(["solve", str(tmp_path / "nope.png"), "-q", "x"], env=env_for(), cwd=tmp_path)
    assert_one_line_error(result, 2, "nope.png", "does not exist")


def test_file_that_is_not_an_image(tmp_path: Path) -> None:
    fake = tmp_path / "notes.png"
    fake.write_text("this is text, not a picture")
    result = run_maps(["solve", str(fake), "-q", "x"], env=env_for(), cwd=tmp_path)
    assert_one_line_error(result, 2, "notes.png", "not a readable image")


def test_unreadable_image_path(tmp_path: Path) -> None:
    result = run_maps(["solve", str(tmp_path), "-q", "x"], env=env_for(), cwd=tmp_path)
    assert_one_line_error(result, 2, "is a folder")


def test_empty_question(png: Path, tmp_path: Path) -> None:
    result = run_maps(["solve", str(png), "-q", "   "], env=env_for(), cwd=tmp_path)
    assert_one_line_error(result, 2, "question")


def test_unknown_key_in_agents_yaml_names_key_and_file(tmp_path: Path) -> None:
    config = write_config(tmp_path / "agents.yaml", **{"critic.treshold": 4})
    result = run_maps(["solve", "-q", "x"], env=env_for(), cwd=tmp_path)
    assert_one_line_error(result, 2, "critic.treshold", str(config))


def test_malformed_yaml(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("roles: [unclosed\n  critic: {")
    result = run_maps(["solve", "-q", "x", "--config", str(tmp_path / "broken.yaml")], env=env_for(), cwd=tmp_path)
    assert_one_line_error(result, 2, "malformed YAML", "broken.yaml")


def test_missing_api_key(tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"model.endpoint": "openai"})
    result = run_maps(["solve", "-q", "x"], env=clean_env(), cwd=tmp_path)
    assert_one_line_error(result, 2, "OPENAI_API_KEY")


def test_unreachable_endpoint(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 1})
    env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    result = run_maps(["solve", "-q", "x", "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert_one_line_error(result, 1, "cannot reach the model service", str(port))


def test_rate_limit_is_retried_honouring_retry_after(png: Path, tmp_path: Path) -> None:
    inner = RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})
    failures = {"aligner": 2}

    def script(request):
        if failures.get(request.role, 0) > 0:
            failures[request.role] -= 1
            return Reply("slow down", status=429, headers={"Retry-After": "1"})
        return inner(request)

    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "x", "--runs-dir", str(tmp_path / "runs"), "--json"], env=env_for(server), cwd=tmp_path)
        aligner_times = [r.at for r in server.received if r.role == "aligner"]
    assert result.returncode == 0, result.stderr
    assert len(aligner_times) == 3
    assert aligner_times[1] - aligner_times[0] >= 0.95 and aligner_times[2] - aligner_times[1] >= 0.95
    run_dir = Path(json.loads(result.stdout)["run_dir"])
    aligner = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines() if '"role": "aligner"' in line][0]
    assert aligner["usage"]["attempts"] == 3


def test_server_errors_exhaust_retries_and_keep_finished_work(png: Path, tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 2})
    inner = RoleScript({"interpreter": ["CAPTION done"], "solver": [solver_json("A")], "critic": [critic_json()]})

    def script(request):
        return Reply("overloaded", status=503) if request.role == "scholar" else inner(request)

    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "x", "--runs-dir", str(tmp_path / "runs")], env=env_for(server), cwd=tmp_path)
        assert server.roles() == ["interpreter", "aligner", "scholar", "scholar", "scholar"]
    assert_one_line_error(result, 1, "HTTP 503", "gave up after 3 attempts")
    run_dir = next((tmp_path / "runs").iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    assert run["stop_reason"] == "error" and "503" in run["error"]
    roles = [json.loads(line).get("role") for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    assert roles[:3] == ["user_proxy", "interpreter", "aligner"]  # finished work is kept


def test_hung_request_times_out(png: Path, tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.timeout_s": 1, "endpoints.openai.max_retries": 0})
    with FakeOpenAI(lambda request: Reply("late", delay_s=5)) as server:
        result = run_maps(["solve", str(png), "-q", "x", "--runs-dir", str(tmp_path / "runs")], env=env_for(server), cwd=tmp_path)
    assert_one_line_error(result, 1, "did not answer within 1s")


def test_malformed_json_reply_is_retried(png: Path, tmp_path: Path) -> None:
    inner = RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})
    broken = {"interpreter": 1}

    def script(request):
        if broken.get(request.role, 0):
            broken[request.role] -= 1
            return Reply(raw_body=b'{"id": "x", "choices": [ {"message": ')
        return inner(request)

    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "x", "--runs-dir", str(tmp_path / "runs"), "--json"], env=env_for(server), cwd=tmp_path)
        assert server.roles()[:2] == ["interpreter", "interpreter"]
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["final_answer"] == "A"


def test_rejected_key_is_never_echoed(png: Path, tmp_path: Path) -> None:
    with FakeOpenAI(lambda request: Reply(f"Incorrect API key provided: {TEST_KEY}", status=401)) as server:
        result = run_maps(["solve", str(png), "-q", "x", "--runs-dir", str(tmp_path / "runs")], env=env_for(server), cwd=tmp_path)
    line = assert_one_line_error(result, 1, "refused the API key", "***")
    assert TEST_KEY not in all_text_in(tmp_path / "runs") and TEST_KEY not in line


def test_retry_warnings_are_one_line_and_masked(png: Path, tmp_path: Path) -> None:
    inner = RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})
    failures = {"interpreter": 1}

    def script(request):
        if failures.get(request.role, 0):
            failures[request.role] -= 1
            return Reply(f"overloaded for key {TEST_KEY}", status=503, headers={"Retry-After": "0"})
        return inner(request)

    with FakeOpenAI(script) as server:
        result = run_maps(["solve", str(png), "-q", "x", "--runs-dir", str(tmp_path / "runs"), "--quiet"], env=env_for(server), cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "A\n"
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING: ")]
    assert len(warnings) == 1 and "HTTP 503" in warnings[0] and "***" in warnings[0]
    assert TEST_KEY not in result.stderr
