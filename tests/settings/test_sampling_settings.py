"""The sampling settings for every step: `--temperature`, `--top-p`, `--seed`, `--max-tokens` on
`maps solve` and `maps eval` (and `every_step:` in agents.yaml, and MAPS_<COMMAND>_<OPTION>),
sent with every step's request over the step's own and recorded as sent; a reply cut at its cap
names the setting of its own step."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen.settings._config import load_config
from tests.helpers.common import REPO, TEST_KEY, clean_env, critic_json, run_maps, solver_json, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply, RoleScript

#: The built-in team's steps, read from it (never written out here).
STEPS = load_config(REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").team.config.names
SOLVER, CRITIC = STEPS[3], STEPS[4]


def team_script(**overrides: list[Reply | str]) -> RoleScript:
    return RoleScript({SOLVER: [solver_json("A")], CRITIC: [critic_json()], **overrides})


def solve(png: Path, tmp_path: Path, server: FakeOpenAI, *extra: str, **env: str):
    return run_maps(["solve", str(png), "-q", "x", "--runs-dir", str(tmp_path / "runs"), "--json", *extra],
                    env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, **env), cwd=tmp_path)


def sampling(request: Received) -> tuple[object, ...]:
    return tuple(request.body.get(key) for key in ("temperature", "top_p", "seed", "max_tokens"))


def run_json(result) -> dict:
    return json.loads((Path(json.loads(result.stdout)["run_dir"]) / "run.json").read_text())


def test_solve_sends_the_settings_given_with_every_step_s_request_and_records_them(png: Path, tmp_path: Path) -> None:
    with FakeOpenAI(team_script()) as server:
        result = solve(png, tmp_path, server, "--temperature", "0.7", "--top-p", "0.9", "--seed", "5", "--max-tokens", "64")
        assert result.returncode == 0, result.stderr
        assert [r.role for r in server.received] == list(STEPS)
        assert {sampling(r) for r in server.received} == {(0.7, 0.9, 5, 64)}  # over each step's own max_tokens
    run = json.loads((tmp_path / "runs" / next((tmp_path / "runs").iterdir()).name / "run.json").read_text())
    for step in STEPS:
        sent = run["models"][step]["sent"]
        assert (sent["temperature"], sent["top_p"], sent["seed"], sent["max_tokens"]) == (0.7, 0.9, 5, 64), step


def test_every_step_in_agents_yaml_the_environment_and_the_command_line_in_that_order(png: Path, tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"every_step.max_tokens": 100, "every_step.top_p": 0.5})
    with FakeOpenAI(team_script()) as server:
        from_file = solve(png, tmp_path, server, MAPS_SOLVE_SEED="9")
        assert from_file.returncode == 0, from_file.stderr
        first = [sampling(r) for r in server.received]
        server.received.clear()
        overridden = solve(png, tmp_path, server, "--max-tokens", "40", MAPS_SOLVE_MAX_TOKENS="50", MAPS_SOLVE_TOP_P="0.8")
        assert overridden.returncode == 0, overridden.stderr
        second = [sampling(r) for r in server.received]
    assert set(first) == {(0.0, 0.5, 9, 100)}  # the file's every_step over each step's own; the seed from MAPS_SOLVE_SEED
    assert set(second) == {(0.0, 0.8, None, 40)}  # the variable over the file, the command line over the variable


def test_a_reply_cut_at_its_cap_names_the_setting_of_its_own_step(png: Path, tmp_path: Path) -> None:
    """Steps with equal settings share one connection; the hint still names the step that was cut."""
    same = {f"team.steps.{index}.model": {"max_tokens": 300} for index in range(len(STEPS))}
    write_config(tmp_path / "agents.yaml", **same)
    cut = Reply(solver_json("A"), finish_reason="length")
    with FakeOpenAI(team_script(**{SOLVER: [cut]})) as server:
        own = solve(png, tmp_path, server)
        every = solve(png, tmp_path, server, "--max-tokens", "64")
    hints = []
    for result in (own, every):
        assert result.returncode == 0, result.stderr
        records = [json.loads(line) for line in (Path(json.loads(result.stdout)["run_dir"]) / "transcript.jsonl").read_text().splitlines()]
        (event,) = [r for r in records if r.get("event") == "max_tokens_reached"]
        assert event["role"] == SOLVER
        hints.append(event["detail"])
    assert f"team.steps[{STEPS.index(SOLVER)}].model.max_tokens" in hints[0] and "steps[0]" not in hints[0]
    assert "raise --max-tokens" in hints[1]


def test_eval_sends_them_with_every_request_records_them_and_keeps_the_sample_seed_apart(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    env = clean_env(OPENAI_API_KEY=TEST_KEY)
    with FakeOpenAI(ProblemScript({pid: row["answer"] for pid, row in rows.items()})) as server:
        env["OPENAI_BASE_URL"] = server.base_url
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--sample", "1",
                           "--subset", "math", "--seed", "3", "--max-tokens", "200", "--no-cache"], env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert server.received and {(r.body["seed"], r.body["max_tokens"]) for r in server.received} == {(3, 200)}
    (eval_dir,) = (tmp_path / "runs").glob("eval-*")
    manifest = json.loads((eval_dir / "manifest.json").read_text())
    assert manifest["sampled"]["math"]["seed"] == 0  # --seed is the models'; the draw keeps --sample-seed's default
    (row,) = [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]
    assert all((sent["seed"], sent["max_tokens"]) == (3, 200) for sent in row["models"].values())


def test_the_python_api_takes_them_as_keywords(png: Path, tmp_path: Path, monkeypatch) -> None:
    import maps_autogen

    with FakeOpenAI(team_script()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.chdir(tmp_path)
        result = maps_autogen.solve(maps_autogen.Problem("x", images=[png]), runs_dir=tmp_path / "runs", seed=11,
                                    top_p=0.5, max_tokens=90)
        assert {sampling(r) for r in server.received} == {(0.0, 0.5, 11, 90)}
    assert result.run.models[SOLVER].sent is not None and result.run.models[SOLVER].sent.seed == 11
