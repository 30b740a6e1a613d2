"""`maps solve` end to end: the real command against the scripted OpenAI-compatible server,
asserting on what the server received and on the files the run wrote."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from maps_autogen.records._schema import SCHEMA_VERSION
from tests.helpers.common import (
    TEST_KEY,
    all_text_in,
    clean_env,
    critic_json,
    make_png,
    run_maps,
    solver_json,
    write_config,
)
from tests.helpers.fake_openai import FakeOpenAI, Reply, RoleScript
from tests.helpers.solve_cli import rollback_script, solve_args

LABELS = {
    "question": "## Question",
    "context": "## Context",
    "options": "## Answer options",
    "caption": "## Diagram description (from the Interpreter)",
    "alignment": "## Aligned problem background (from the Aligner)",
    "knowledge": "## Domain knowledge (from the Scholar)",
    "solution": "## Proposed solution (from the Solver)",
    "previous": "## Your previous answer",
    "feedback": "## The Critic's question about your previous answer",
}
DECLARED = {
    "interpreter": {"question", "context", "options"},  # only to know what each image is
    "aligner": {"question", "context", "options", "caption"},
    "scholar": {"question", "context", "options", "caption", "alignment"},  # q with its options (Eq. 4)
    "solver": {"question", "options", "caption", "alignment", "knowledge"},
    "critic": {"caption", "alignment", "knowledge", "solution"},
}






def test_full_chat_with_one_rollback(png: Path, tmp_path: Path) -> None:
    # The paper's layout: each request's order is read below.
    config = write_config(tmp_path / "agents.yaml", **{"critic.final_review": True,
                                                        "endpoints.openai.prompt_layout": "paper"})
    with FakeOpenAI(rollback_script()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path, "--config", str(config), "--json"), env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["final_answer"] == "B"
    assert summary["stop_reason"] == "critic_passed"
    assert summary["rollbacks"] == ["scholar"]
    assert summary["usage"]["calls"] == 8 and summary["usage"]["prompt_tokens"] > 0 and summary["usage"]["cost"] > 0

    # The exact sequence of requests: no call for the Manager (or anyone else) in between.
    assert server.roles() == ["interpreter", "aligner", "scholar", "solver", "critic", "scholar", "solver", "critic"]
    requests = server.received
    image_b64 = base64.b64encode(png.read_bytes()).decode()
    for request in requests:
        assert request.headers["authorization"] == f"Bearer {TEST_KEY}"
        # Only the Interpreter's request carries the image.
        if request.role == "interpreter":
            assert request.image_urls() == [f"data:image/png;base64,{image_b64}"]
        else:
            assert request.image_urls() == []
            assert image_b64[:200] not in json.dumps(request.body)
        # Each role's request holds exactly its declared inputs, labelled.
        text = request.user_text()
        shown = {name for name, label in LABELS.items() if label in text and name in DECLARED["critic"] | DECLARED["aligner"] | DECLARED["solver"]}
        assert shown == DECLARED[request.role], (request.role, shown)
        assert [m["role"] for m in request.messages] == ["system", "user"]
        assert f"You are the {request.role.capitalize()}" in request.messages[0]["content"]

    interpreter, aligner, scholar1, solver1, critic1, scholar2, solver2, critic2 = requests
    assert "CAPTION: a lever" in aligner.user_text() and "Which mass balances" in aligner.user_text()
    assert "ALIGNED" in scholar1.user_text() and "KNOWLEDGE" not in scholar1.user_text()
    assert "KNOWLEDGE v1" in solver1.user_text() and "A. 2 kg\nB. 4 kg" in solver1.user_text()
    assert "KNOWLEDGE v1" in critic1.user_text() and '"final_answer": "A"' in critic1.user_text()
    assert "The lever is light" not in critic1.user_text()  # the Critic gets no context or question
    # The rolled-back step sees its previous output and the Critic's feedback for its dimension.
    assert LABELS["previous"] in scholar2.user_text() and "KNOWLEDGE v1: forces add up." in scholar2.user_text()
    assert "Which quantity must balance on a lever?" in scholar2.user_text()
    assert "question about alignment?" not in scholar2.user_text()
    # Later steps re-run on the new output, without feedback of their own.
    assert "KNOWLEDGE v2" in solver2.user_text() and LABELS["feedback"] not in solver2.user_text()
    assert "KNOWLEDGE v2" in critic2.user_text() and '"final_answer": "B"' in critic2.user_text()
    # The Solver and the Critic ask for JSON through the API.
    assert solver1.body["response_format"]["type"] == "json_schema"
    schema = critic1.body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["scores"]["required"] == ["caption", "alignment", "knowledge", "solution"]
    assert "response_format" not in scholar1.body

    run_dir = Path(summary["run_dir"])
    run = json.loads((run_dir / "run.json").read_text())
    assert run["schema_version"] == SCHEMA_VERSION and run["stop_reason"] == "critic_passed" and run["final_answer"] == "B"
    assert run["problem"]["options"] == ["2 kg", "4 kg"] and run["problem"]["context"] == "The lever is light."
    assert run["models"]["solver"]["model"] == "gpt-4o"
    assert run["config"]["critic"]["final_review"] is True
    assert run["rollbacks"][0]["step"] == "scholar" and run["usage"]["calls"] == 8
    assert (run_dir / "images" / "image-1.png").read_bytes() == png.read_bytes()

    records = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    messages = [r for r in records if r["type"] == "message"]
    assert [m["role"] for m in messages] == ["user_proxy", "interpreter", "aligner", "scholar", "solver", "critic", "scholar", "solver", "critic"]
    assert [m["round"] for m in messages] == [0, 0, 0, 0, 0, 0, 1, 1, 1]
    assert [m["revision"] for m in messages].count(True) == 1 and messages[6]["revision"] is True
    for message in messages[1:]:
        assert message["usage"]["prompt_tokens"] > 0 and message["seconds"] >= 0 and message["content"]
        assert message["schema_version"] == SCHEMA_VERSION
    assert messages[5]["parsed"]["scores"]["knowledge"] == 2
    assert messages[1]["request"][1]["content"][1] == {"type": "image_file", "file": "images/image-1.png"}
    events = [r["event"] for r in records if r["type"] == "event"]
    assert events == ["rollback", "stop"]
    # Images are stored once, never inlined; the key is nowhere.
    text = all_text_in(run_dir)
    assert "base64," not in text and TEST_KEY not in text
    assert TEST_KEY not in result.stdout + result.stderr


def test_live_view_streams_the_conversation(png: Path, tmp_path: Path) -> None:
    with FakeOpenAI(rollback_script()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path), env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    order = [out.index(marker) for marker in ("── UserProxy", "── Interpreter", "── Aligner", "── Scholar", "── Solver", "── Critic", "rollback 1",
                                              "by the Critic:", "feedback: Which quantity must balance on a lever?", "stopped: critic_passed", "Final answer: B")]
    assert order == sorted(order)
    assert "[images/image-1.png]" in out and "Critic's scores" in out
    assert "using gpt-4o at" in result.stderr


def test_quiet_prints_only_the_answer(png: Path, tmp_path: Path) -> None:
    with FakeOpenAI(rollback_script()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path, "--quiet", "--max-rollbacks", "0"), env=env, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "A. 2 kg\n"  # the option letter with its text
    assert server.roles() == ["interpreter", "aligner", "scholar", "solver", "critic"]


def test_streaming_records_usage_and_prints_tokens(png: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path / "agents.yaml", **{"endpoints.openai.stream": True})
    with FakeOpenAI(rollback_script()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path, "--config", str(config), "--max-rollbacks", "0"), env=env, cwd=tmp_path)
        bodies = [r.body for r in server.received]
    assert result.returncode == 0, result.stderr
    assert all(body["stream"] is True and body["stream_options"] == {"include_usage": True} for body in bodies)
    assert "(streaming)" in result.stdout and "CAPTION: a lever" in result.stdout
    run_dir = next((tmp_path / "runs").iterdir())
    run = json.loads((run_dir / "run.json").read_text())
    assert run["usage"]["calls"] == 5 and run["usage"]["completion_tokens"] > 0


def test_no_image_skips_the_interpreter(tmp_path: Path) -> None:
    script = RoleScript({
        "aligner": ["ALIGNED"], "scholar": ["KNOW"], "solver": [solver_json("12")],
        "critic": [critic_json(None, 5, 5, 5)],
    })
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", "-q", "What is 3 times 4?", "--runs-dir", str(tmp_path / "runs"), "--json"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["final_answer"] == "12" and summary["stop_reason"] == "critic_passed"
    assert server.roles() == ["aligner", "scholar", "solver", "critic"]
    critic = server.received[-1]
    assert critic.body["response_format"]["json_schema"]["schema"]["properties"]["scores"]["required"] == ["alignment", "knowledge", "solution"]
    assert "no diagram" in critic.user_text() and LABELS["caption"] not in critic.user_text()
    records = [json.loads(line) for line in (Path(summary["run_dir"]) / "transcript.jsonl").read_text().splitlines()]
    assert records[0]["event"] == "interpreter_skipped"


def test_unparseable_solver_falls_back_to_text(png: Path, tmp_path: Path) -> None:
    # An unparseable reply is first retried within the retry budget; only the last one falls back.
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 1})
    script = RoleScript({"solver": ["I believe it is 4 kg.\nFinal answer: 4 kg"], "critic": [critic_json()]})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path, "--json"), env=env, cwd=tmp_path)
        assert server.roles().count("solver") == 2
    summary = json.loads(result.stdout)
    assert result.returncode == 0 and summary["final_answer"] == "4 kg" and summary["stop_reason"] == "critic_passed"
    records = [json.loads(line) for line in (Path(summary["run_dir"]) / "transcript.jsonl").read_text().splitlines()]
    assert "solver_unparsed" in [r.get("event") for r in records]
    assert next(r for r in records if r.get("role") == "solver")["rejected"] == "the Solver's reply is not valid JSON with a final answer"
    assert json.loads((Path(summary["run_dir"]) / "run.json").read_text())["solver_parsed"] is False


def test_unparseable_critic_ends_the_chat_and_the_answer_stands(png: Path, tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 1})
    script = RoleScript({"solver": [solver_json("B")], "critic": ["Looks fine to me, well done."]})
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path, "--json"), env=env, cwd=tmp_path)
    summary = json.loads(result.stdout)
    assert result.returncode == 0
    assert summary["stop_reason"] == "critic_unparseable" and summary["final_answer"] == "B"
    # Retried once within the budget, then the Solver's answer stands.
    assert server.roles() == ["interpreter", "aligner", "scholar", "solver", "critic", "critic"]


def test_problem_file_with_relative_image_and_data_url(tmp_path: Path) -> None:
    folder = tmp_path / "problem"
    folder.mkdir()
    make_png(folder / "diagram.png", color="yellow")
    second = make_png(tmp_path / "other.png", size=(50, 40))
    data_url = "data:image/png;base64," + base64.b64encode(second.read_bytes()).decode()
    (folder / "problem.yaml").write_text(
        "question: Which option?\noptions: [one, two]\nimages:\n  - diagram.png\n  - " + data_url + "\n"
    )
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", "--problem", str(folder / "problem.yaml"), "--runs-dir", str(tmp_path / "runs"), "--json"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(server.received[0].image_urls()) == 2
    run_dir = Path(json.loads(result.stdout)["run_dir"])
    assert sorted(p.name for p in (run_dir / "images").iterdir()) == ["image-1.png", "image-2.png"]


def test_threshold_override_and_env_file(png: Path, tmp_path: Path) -> None:
    script = RoleScript({"solver": [solver_json("A")], "critic": [critic_json(4, 4, 4, 4)]})
    with FakeOpenAI(script) as server:
        (tmp_path / ".env").write_text(f"OPENAI_API_KEY={TEST_KEY}\nOPENAI_BASE_URL={server.base_url}\n")
        result = run_maps(solve_args(png, tmp_path, "--threshold", "4", "--json"), env=clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stop_reason"] == "critic_passed"


def test_model_per_role_from_config(png: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path / "agents.yaml", **{"team.steps.4.model": {"endpoint": "openai", "name": "critic-model"}})
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path, "--config", str(config), "--model", "main-model"), env=env, cwd=tmp_path)
        models = [(r.role, r.body["model"]) for r in server.received]
    assert result.returncode == 0, result.stderr
    # --model applies to every role, overriding the per-role choice.
    assert {model for _, model in models} == {"main-model"}
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path, "--config", str(config)), env=env, cwd=tmp_path)
        models = dict((r.role, r.body["model"]) for r in server.received)
    assert result.returncode == 0
    assert models == {"interpreter": "gpt-4o", "aligner": "gpt-4o", "scholar": "gpt-4o", "solver": "gpt-4o", "critic": "critic-model"}


def test_endpoint_without_json_schema_support_falls_back(png: Path, tmp_path: Path) -> None:
    inner = RoleScript({"solver": [solver_json("A")], "critic": [critic_json()]})

    def script(request):
        fmt = request.body.get("response_format")
        if fmt and fmt["type"] == "json_schema":
            return Reply("response_format json_schema is not supported", status=400)
        return inner(request)

    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(solve_args(png, tmp_path, "--json"), env=env, cwd=tmp_path)
        formats = [r.body.get("response_format", {}).get("type") for r in server.received if r.role in ("solver", "critic")]
    assert result.returncode == 0, result.stderr
    assert formats == ["json_schema", "json_object", "json_object"]
    assert json.loads(result.stdout)["stop_reason"] == "critic_passed"
