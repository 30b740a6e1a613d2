"""Our client never re-sends an unusable structured reply's request unchanged (issue 32: at
temperature 0, with a seed or on a deterministic server the same request brings back the same
reply): the retry carries one more user message, prompts/task.yaml's `unusable_reply_note`,
naming what was wrong with the previous reply, and the transcript records that request (what
was sent), not the first one."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.common import TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, RoleScript


def test_a_retry_of_an_unusable_reply_goes_out_changed_and_says_why(tmp_path: Path) -> None:
    script = RoleScript({"interpreter": ["CAPTION"], "solver": ["I think it is B.", solver_json("B")],
                         "critic": [critic_json()]})
    figure = make_png(tmp_path / "figure.png")
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", str(figure), "-q", "Which is heavier?", "--runs-dir", str(tmp_path / "runs"),
                           "--json"], env=env, cwd=tmp_path)
        solver = [request for request in server.received if request.method == "POST" and request.role == "solver"]
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["final_answer"] == "B"
    first, second = solver
    assert second.body != first.body
    # The same request, with one user message more: the note naming what was wrong.
    assert second.messages[:-1] == first.messages
    note = second.messages[-1]
    assert note["role"] == "user"
    assert note["content"].startswith("Your previous reply to this request could not be used: ")
    assert "not valid JSON with a final answer" in note["content"]

    run_dir = Path(json.loads(result.stdout)["run_dir"])
    records = [json.loads(line) for line in (run_dir / "transcript.jsonl").read_text().splitlines()]
    (answer,) = [record for record in records if record.get("role") == "solver"]
    assert answer["usage"]["attempts"] == 2
    assert answer["request"][-1] == note  # the transcript keeps what was sent


def test_the_switch_back_max_retries_zero_sends_an_unusable_reply_s_request_once(tmp_path: Path) -> None:
    """docs/paper.md's switch back (`endpoints: {openai: {max_retries: 0}}`): no retry, so no note;
    the unusable reply stands (the Solver's text as its answer)."""
    (tmp_path / "agents.yaml").write_text("endpoints: {openai: {max_retries: 0}}\n")
    script = RoleScript({"interpreter": ["CAPTION"], "solver": ["I think it is B.", solver_json("B")],
                         "critic": [critic_json()]})
    figure = make_png(tmp_path / "figure.png")
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["solve", str(figure), "-q", "Which is heavier?", "--runs-dir", str(tmp_path / "runs"),
                           "--json"], env=env, cwd=tmp_path)
        solver = [request for request in server.received if request.method == "POST" and request.role == "solver"]
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["final_answer"] == "I think it is B." and len(solver) == 1
    assert "could not be used" not in json.dumps(solver[0].messages)
