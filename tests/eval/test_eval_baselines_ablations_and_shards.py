"""Defects a review of the issue 22-25 work found: each test goes red on the code before its fix."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Reply


def _config(folder: Path) -> Path:
    config = folder / "agents.yaml"
    config.write_text("endpoints:\n  openai:\n    max_retries: 0\n")
    return config


def test_a_baseline_that_sent_nothing_records_its_request_settings_not_as_sent(tmp_path: Path) -> None:
    """run.json says `sent` only for settings read back from a request that was sent."""
    data, rows = write_mathvista_jsonl(tmp_path / "data", 1)
    with FakeOpenAI(ProblemScript({}, fail=set(rows), baseline=True)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--method", "cot",
                           "--config", str(_config(tmp_path))], env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    (run_json,) = (tmp_path / "runs").glob("eval-*/problems/*/run.json")
    (model,) = json.loads(run_json.read_text())["models"].values()
    assert "sent" not in model and model["request_settings"]["model"] == "gpt-4o"


class _SafetyRefusals(ProblemScript):
    """Problems 1 and 2 are refused by a content filter, word for word alike; 3 is answered."""

    def _reply(self, request):  # type: ignore[no-untyped-def]
        if self._pid(request) in ("1", "2"):
            body = {"error": {"message": "Your request was rejected as a result of our safety system.", "type": "invalid_request_error",
                              "code": "content_policy_violation"}}
            return Reply(status=400, raw_body=json.dumps(body).encode())
        return super()._reply(request)


def test_two_content_refusals_in_a_row_do_not_stop_the_eval(tmp_path: Path) -> None:
    """A refusal of one problem's content reads the same for every problem it hits: two in a row
    are not a service that every problem would meet, so the run goes on to problem 3."""
    data, rows = write_mathvista_jsonl(tmp_path / "data", 3)
    answers = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    with FakeOpenAI(_SafetyRefusals(answers)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--concurrency", "1",
                           "--config", str(_config(tmp_path))], env=env, cwd=tmp_path)
    assert "stopped early" not in result.stderr, result.stderr
    rows_written = [json.loads(line) for line in next((tmp_path / "runs").glob("eval-*/results.jsonl")).read_text().splitlines()]
    assert sorted((row["pid"], row["status"]) for row in rows_written) == [("1", "failed"), ("2", "failed"), ("3", "ok")]


def test_an_ablation_is_compared_with_the_full_run_of_its_own_models() -> None:
    """Table 2: with full runs of two models, an ablation of the second is compared with the
    second's full run, never with whichever full run came first."""
    from maps_autogen.eval import Run
    from maps_autogen.report._report import table2
    from tests.helpers.synthetic_runs import eval_manifest, model_record, result_row

    def run(model: str, without: list[str], correct: list[bool]) -> Run:
        manifest = eval_manifest("mathvista", range(len(correct)), without=without,
                                 models={"solver": model_record(model, endpoint=None, kind=None)})
        rows = [result_row(str(n), subset="general-vqa", correct=c) for n, c in enumerate(correct)]
        return Run(path=Path(f"/runs/{model}-{'-'.join(without)}"), manifest=manifest, records=rows)

    table = table2([run("gpt-4o", [], [True, True]), run("qwen", [], [True, False]), run("qwen", ["interpreter"], [False, False])])
    assert table is not None
    # Against qwen's 50%, not gpt-4o's 100% (gpt-4o has no ablation, so no table of its own).
    assert "| maps (qwen) | 50.00 | 50.00 |" in table and "0.00 (-50.00)" in table and "gpt-4o" not in table
    assert "(-100.00)" not in table


def test_merge_refuses_a_shard_resumed_under_changed_settings(tmp_path: Path) -> None:
    """A shard resumed with --allow-change numbers its own settings; merged, its rows' numbers
    would name other settings: refused in one line, no --out written."""
    data, rows = write_mathvista_jsonl(tmp_path / "data", 4)
    answers = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    with FakeOpenAI(ProblemScript(answers, fail={"1"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        config = _config(tmp_path)
        shards = []
        for shard in ("1/2", "2/2"):
            runs = tmp_path / f"shard{shard[0]}"
            run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--shard", shard, "--config", str(config),
                      "--concurrency", "1"], env=env, cwd=tmp_path)
            shards.append(next(runs.glob("eval-*")))
        server.script = ProblemScript(answers)
        for shard_dir in shards:  # both now end under the same (changed) settings
            resumed = run_maps(["eval", "mathvista", "--resume", str(shard_dir), "--threshold", "4", "--allow-change", "--config",
                                str(config)], env=env, cwd=tmp_path)
            assert resumed.returncode == 0, resumed.stderr
    merged = run_maps(["merge", *map(str, shards), "--out", str(tmp_path / "merged")], env=clean_env(), cwd=tmp_path)
    assert merged.returncode == 2 and "resumed under changed settings" in merged.stderr, merged.stderr
    assert len(merged.stderr.strip().splitlines()) == 1 and not (tmp_path / "merged").exists()


def test_view_masks_a_key_written_inline_in_the_config_list_agents_yaml_names(tmp_path: Path) -> None:
    """An AG2 user's key lives in their OAI_CONFIG_LIST file, not in a variable: `maps view`
    (like solve and eval) masks it wherever it appears in the files it reads."""
    from tests.helpers.common import solver_json

    inline = "sk-inline-0123456789abcdef-secret"
    work = tmp_path / "work"
    work.mkdir()
    with FakeOpenAI(lambda request: Reply(solver_json("42")) if request.role == "solver" else Reply(f"the key is {inline}")) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        solved = run_maps(["solve", "-q", "What is 6*7?", "--runs-dir", str(tmp_path / "runs"), "--quiet", "--without", "critic"],
                          env=env, cwd=work)
    assert solved.returncode == 0, solved.stderr
    (run_dir,) = (tmp_path / "runs").glob("solve-*")
    assert inline in (run_dir / "transcript.jsonl").read_text()  # this solve had no way to know it
    (work / "OAI_CONFIG_LIST").write_text(json.dumps([{"model": "gpt-4o", "api_key": inline}]))
    (work / "agents.yaml").write_text("config_list: OAI_CONFIG_LIST\n")
    page = run_maps(["view", str(run_dir), "--out", str(tmp_path / "page.html")], env=clean_env(), cwd=work)
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "page.html").read_text()
    assert "the key is" in html and inline not in html and inline[:-1] not in html
