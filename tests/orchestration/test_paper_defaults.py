"""The defaults follow the papers' words, read from the requests as sent on a vision endpoint, a
text-only one (`vision: false`) and the embedded model (its launcher pointed at the scripted
server); every remaining difference has its switch (docs/paper.md):

- the Critic's feedback is one Socratic question per dimension (seed 000's Table 6, item 3),
  aimed by each step's `feedback_template`; suggested adjustments are the reviewer's prompt
  `prompts/critic_adjustments.yaml`;
- no step but the Solver is asked for a result (Tables 4-5); `preliminary_result: true` on a step
  invites one, as 000's Figure 9 shows;
- the preamble's "Do not invent measurements" is ours: `team: {grounding: false}` leaves it out;
- a Solver reply that is not JSON gives its text as the answer; `answer_fallback: none` gives none.

Inspect's path shares these prompts: tests/inspect_tasks/test_inspect_tasks.py (the custom benchmark)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from tests.helpers.common import REPO, TEST_KEY, clean_env, critic_json, make_png, run_maps, solver_json
from tests.helpers.fake_openai import FakeOpenAI, Received, RoleScript

KINDS = ("vision", "text-only", "embedded")
TEAM = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").read_text())["team"]
TEMPLATES = {step["critic_dimension"]: step["feedback_template"] for step in TEAM["steps"] if "feedback_template" in step}
GROUNDING = "Do not invent measurements that are not given."
PRELIMINARY = ("If a result follows directly from your work, you may state it at the end as a preliminary result for "
               "the Solver to verify, marked as such.")


def flat(text: str) -> str:
    return " ".join(text.split())


def solve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, config: dict[str, Any] | None = None,
          script: dict[str, list[str]] | None = None) -> tuple[dict[str, Any], list[Received]]:
    """`maps solve --json` of a lever problem with options on an endpoint of `kind`: (summary, requests)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = json.loads(json.dumps(config or {}))
    if kind == "text-only":
        config.setdefault("endpoints", {}).setdefault("openai", {})["vision"] = False
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(config))
    image = make_png(tmp_path / "lever.png")
    args = ["solve", str(image), "-q", "Which mass balances 3 kg at 0.4 m?", "-o", "2 kg", "-o", "4 kg",
            "--runs-dir", str(tmp_path / "runs"), "--json"]
    with FakeOpenAI(RoleScript({"solver": [solver_json("A")], "critic": [critic_json()], **(script or {})})) as server:
        if kind == "embedded":
            import maps_autogen.model.local._server as local_server
            monkeypatch.setattr(local_server, "shared_local_server", lambda settings: SimpleNamespace(
                base_url=server.base_url, api_key="local-no-key", ensure_alive=lambda: None))
            result = run_maps([*args, "--model", "local"], env=clean_env(), cwd=tmp_path)
        else:
            result = run_maps(args, env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY),
                              cwd=tmp_path)
        received = list(server.received)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout), received


def of(requests: list[Received], role: str) -> list[str]:
    """The whole text of each request of `role` (system and user messages), whitespace folded."""
    return [flat("\n".join(message["content"] if isinstance(message["content"], str) else
                           "\n".join(part.get("text", "") for part in message["content"])
                           for message in request.messages)) for request in requests if request.role == role]


def reviewer_steps(**changes: Any) -> list[dict[str, Any]]:
    steps = json.loads(json.dumps(TEAM["steps"]))
    steps[-1].update(changes)
    return steps


# ----- the Critic's feedback: a Socratic question per dimension ------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_the_critic_asks_one_socratic_question_per_dimension_aimed_by_its_template(tmp_path, monkeypatch, kind) -> None:
    _, requests = solve(tmp_path, monkeypatch, kind)
    (critic,) = of(requests, "critic")
    assert "ask the single Socratic question that would lead its author to re-examine the work and find the " \
           "weakness themselves, without giving the answer or the fix" in critic
    for dimension, template in TEMPLATES.items():
        assert f"- {dimension}: {flat(template)}" in critic
    assert '"feedback", mapping each dimension\'s name to its one Socratic question, in one sentence' in critic
    assert "suggest" not in critic.lower() and "adjustment" not in critic.lower()


def test_suggested_adjustments_are_the_reviewers_other_prompt(tmp_path, monkeypatch) -> None:
    steps = reviewer_steps(prompt="prompts/critic_adjustments.yaml")
    _, requests = solve(tmp_path, monkeypatch, "vision", {"team": {"steps": steps}})
    (critic,) = of(requests, "critic")
    assert "Adjustment: for each dimension, suggest the change that would let it withstand your challenges" in critic
    assert "mapping each dimension's name to the adjustment you suggest for it" in critic
    assert "Socratic question" not in critic
    for dimension, template in TEMPLATES.items():
        assert f"- {dimension}: {flat(template)}" in critic


# ----- no step but the Solver is asked for a result --------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_no_step_but_the_solver_is_asked_for_a_result_unless_a_step_says_so(tmp_path, monkeypatch, kind) -> None:
    _, requests = solve(tmp_path / "default", monkeypatch, kind)
    for role in ("interpreter", "aligner", "scholar", "critic"):
        (text,) = of(requests, role)
        assert "preliminary" not in text.lower() and "final answer" not in text.lower(), role
    (solver,) = of(requests, "solver")
    assert '"final_answer", which holds only the answer you reached' in solver
    steps = json.loads(json.dumps(TEAM["steps"]))
    for step in steps[1:3]:  # the Aligner and the Scholar, as 000's Figure 9 shows them
        step["preliminary_result"] = True
    _, requests = solve(tmp_path / "switch", monkeypatch, kind, {"team": {"steps": steps}})
    for role in ("aligner", "scholar"):
        (text,) = of(requests, role)
        assert text.endswith(PRELIMINARY), role  # after its instruction, naming the team's answer step
    for role in ("interpreter", "solver", "critic"):
        assert all(PRELIMINARY not in text for text in of(requests, role)), role


@pytest.mark.parametrize(("index", "key", "value", "said"), [
    (3, "preliminary_result", True, "team.steps[3] (solver).preliminary_result: the final-answer step gives the "
                                    "answer itself"),
    (4, "preliminary_result", True, "team.steps[4] (critic).preliminary_result: the reviewer gives no result"),
    (1, "answer_fallback", "none", "team.steps[1] (aligner).answer_fallback: only a step with output: answer has a "
                                   "JSON reply to fall back from"),
])
def test_a_switch_on_a_step_it_cannot_apply_to_is_refused_in_one_line(tmp_path, index, key, value, said) -> None:
    steps = json.loads(json.dumps(TEAM["steps"]))
    steps[index][key] = value
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump({"team": {"steps": steps}}))
    result = run_maps(["config"], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert said in result.stderr


# ----- the preamble's grounding sentence ------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_the_preambles_grounding_reaches_every_step_unless_the_team_leaves_it_out(tmp_path, monkeypatch, kind) -> None:
    _, kept = solve(tmp_path / "kept", monkeypatch, kind)
    _, left = solve(tmp_path / "left", monkeypatch, kind, {"team": {"grounding": False}})
    roles = ["interpreter", "aligner", "scholar", "solver", "critic"]
    assert [request.role for request in kept] == [request.role for request in left] == roles
    preamble = ("A user has brought a scientific problem (physics, chemistry or mathematics, often with a diagram) to "
                "a team of specialists.")
    for role in roles:
        (with_it,), (without_it,) = of(kept, role), of(left, role)
        assert with_it.count(GROUNDING) == 1 and GROUNDING not in without_it, role
        assert preamble in with_it and preamble in without_it
        assert with_it.replace(f" {GROUNDING}", "") == without_it  # nothing else differs


# ----- a Solver reply that is not JSON --------------------------------------------------------

def test_a_solver_reply_that_is_not_json_gives_its_text_or_with_the_switch_no_answer(tmp_path, monkeypatch) -> None:
    reply = "Balancing the torques, the answer is B."
    config = {"endpoints": {"openai": {"max_retries": 0}}}
    summary, requests = solve(tmp_path / "text", monkeypatch, "vision", config, {"solver": [reply]})
    assert summary["final_answer"] == reply and [r.role for r in requests].count("solver") == 1
    steps = json.loads(json.dumps(TEAM["steps"]))
    steps[3]["answer_fallback"] = "none"
    summary, requests = solve(tmp_path / "none", monkeypatch, "vision", {**config, "team": {"steps": steps}},
                              {"solver": [reply]})
    assert summary["final_answer"] == "" and [r.role for r in requests].count("solver") == 1
    transcript = (Path(summary["run_dir"]) / "transcript.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in transcript if '"solver_unparsed"' in line]
    assert [event["detail"] for event in events] == [
        "the Solver's reply was not valid JSON; it gives no final answer (answer_fallback: none)"]
    run = json.loads((Path(summary["run_dir"]) / "run.json").read_text())
    assert run["solver_parsed"] is False and run["final_answer"] == ""
