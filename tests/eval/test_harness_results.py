"""results.json beside summary.json, in the layout lm-evaluation-harness and lmms-eval write:
accuracy and its standard error per task and subset (as their `acc` and `acc_stderr`), the
Wilson interval, the model configuration and what each step sent, versions, and where the
per-sample logs are; written by `maps eval` and by `maps merge`."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from maps_autogen.settings._config import load_config
from tests.helpers.common import REPO, TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI

#: The built-in team's steps, read from it (never written out here).
STEPS = load_config(REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").team.config.names
# lm-evaluation-harness's EvalResults keys (lm_eval/result_schema.py) that apply to a run of ours
HARNESS_KEYS = {"results", "groups", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better", "n-samples",
                "config", "git_hash", "date"}


def eval_folder(runs: Path) -> Path:
    (folder,) = [path for path in runs.iterdir() if path.name.startswith(("eval-", "merged"))]
    return folder


def right_answers(rows: dict) -> dict[str, str]:
    return {pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()}


def test_eval_writes_results_json_in_the_harness_layout(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 8)  # odd pids general, even pids math
    answers = right_answers(rows) | {"2": "999", "4": "999", "6": "999"}  # math: 1 of 4 right (pid 8)
    with FakeOpenAI(ProblemScript(answers, fail={"7"})) as server:  # general: 3 of 3 scored right, pid 7 fails
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--no-cache"], env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url), cwd=tmp_path)
    assert result.returncode == 1, result.stderr  # a problem failed
    folder = eval_folder(tmp_path / "runs")
    harness = json.loads((folder / "results.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())
    summary = json.loads((folder / "summary.json").read_text())
    assert HARNESS_KEYS <= set(harness)

    assert harness["group_subtasks"] == {"mathvista": ["mathvista_general", "mathvista_math"]}
    general, math_, whole = (harness["results"][task] for task in ("mathvista_general", "mathvista_math", "mathvista"))
    assert harness["groups"]["mathvista"] == whole and general["alias"] == "general" and general["name"] == "mathvista_general"
    # accuracy is correct / scored (the failed problem has no verdict), as a fraction like the harness's acc
    assert (general["acc,none"], general["sample_len"]) == (1.0, 3)
    assert (math_["acc,none"], math_["sample_len"]) == (0.25, 4)
    assert whole["acc,none"] == round(4 / 7, 6) and whole["sample_len"] == 7
    assert round(whole["acc,none"] * 100, 2) == summary["average"]["accuracy"]
    # the standard error the harness computes: the sample standard deviation of the outcomes over sqrt(n)
    outcomes = [1, 0, 0, 0]
    assert math_["acc_stderr,none"] == round(statistics.stdev(outcomes) / math.sqrt(4), 6)
    assert general["acc_stderr,none"] == 0.0
    # the Wilson interval: never [1, 1] for 3 of 3
    assert 0.4 < general["acc_ci95_lower,none"] < 0.5 and general["acc_ci95_upper,none"] == 1.0
    assert math_["acc_ci95_lower,none"] < 0.25 < math_["acc_ci95_upper,none"]
    assert harness["counts"]["mathvista_general"] == {"n": 4, "scored": 3, "correct": 3, "failed": 1}
    assert harness["n-samples"]["mathvista_general"] == {"original": 4, "effective": 4}
    assert harness["n-samples"]["mathvista"] == {"original": 8, "effective": 8}
    assert harness["higher_is_better"]["mathvista"] == {"acc": True} and harness["n-shot"]["mathvista"] == 0

    # the model configuration: each step's model and what its requests carry
    config = harness["config"]
    assert config["model"] == "gpt-4o" and sorted(config["model_args"]) == sorted(STEPS)
    assert config["gen_kwargs"] == {step: manifest["models"][step]["request_settings"] for step in STEPS}
    assert all(config["gen_kwargs"][step]["max_tokens"] for step in STEPS)
    assert config["method"] == "maps" and config["random_seed"] == manifest["seed"]
    assert harness["configs"]["mathvista"]["team"] == list(STEPS)
    assert harness["configs"]["mathvista"]["scoring_rules"] == "current" == harness["versions"]["mathvista"]
    # versions, the commit and the date, from the manifest
    assert harness["maps_autogen_version"] == manifest["versions"]["maps-autogen"]
    assert harness["environment"]["sympy"] == manifest["versions"]["sympy"]
    assert harness["git_hash"] == manifest["git_commit"] and isinstance(harness["date"], float)
    # the per-sample logs it points at exist
    logs = harness["sample_logs"]["mathvista"]
    assert (folder / logs["rows"]).is_file() and (folder / logs["summary"]).is_file()
    assert (folder / logs["transcripts"].replace("<pid>", "1") / "run.json").is_file()
    assert TEST_KEY not in (folder / "results.json").read_text()


def test_merge_writes_results_json_for_the_whole_run(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    env = clean_env(OPENAI_API_KEY=TEST_KEY)
    shards = []
    with FakeOpenAI(ProblemScript(right_answers(rows) | {"4": "999"})) as server:
        env["OPENAI_BASE_URL"] = server.base_url
        for shard in ("1/2", "2/2"):
            runs = tmp_path / f"shard-{shard[0]}"
            done = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--shard", shard, "--no-cache"],
                            env=env, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            shards.append(str(eval_folder(runs)))
    merged = run_maps(["merge", *shards, "--out", str(tmp_path / "merged" / "merged")], env=env, cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    harness = json.loads((tmp_path / "merged" / "merged" / "results.json").read_text())
    assert harness["results"]["mathvista"]["acc,none"] == 0.75 and harness["results"]["mathvista"]["sample_len"] == 4
    assert harness["n-samples"]["mathvista"]["effective"] == 4
