"""lm-evaluation-harness's own layout beside our files, read with lm-eval's own functions (the
`lab` extra installs lm-eval): `get_results_filenames` and `get_sample_results_filenames` find
`<model>/results_<date>.json` and `<model>/samples_<task>_<date>.jsonl` (the model's name sanitized
as lm-eval's `sanitize_model_name`), `get_file_task_name` names each task, `make_table` renders the
results and groups, and its W&B logger (offline) logs the results and every subtask's samples; the
per-sample hashes are lm-eval's, and a failed problem is no sample (never a wrong answer)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_custom_jsonl
from tests.helpers.fake_openai import FakeOpenAI

MODEL = "openai/gpt-4o"  # a gateway's name: lm-eval's folder for it is openai__gpt-4o


@pytest.fixture(scope="module")
def eval_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`maps eval custom` of 6 problems in two subsets (odd, even): p3 and p6 answered wrong, p5 failed."""
    folder = tmp_path_factory.mktemp("lm-eval-layout")
    data, answers = write_custom_jsonl(folder / "data", 6)
    with FakeOpenAI(ProblemScript(answers, critic_low={"p2"}, fail={"p5"})) as server:
        done = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(folder / "runs"), "--no-cache",
                         "--quiet", "--model", MODEL],
                        env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url), cwd=folder)
    assert done.returncode == 1, done.stderr  # a problem failed
    (run,) = (folder / "runs").glob("eval-*")
    return run


def every_file(folder: Path) -> list[str]:
    return sorted(str(path) for path in folder.rglob("*") if path.is_file())


def read_samples(eval_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Each task's samples, found and named as lm-eval finds and names them."""
    from lm_eval.utils import get_file_task_name, get_sample_results_filenames

    samples = {}
    for name in get_sample_results_filenames(every_file(eval_dir)):
        samples[get_file_task_name(Path(name).name)] = [json.loads(line) for line in Path(name).read_text().splitlines()]
    return samples


def test_lm_evals_finders_find_our_files_under_the_sanitized_model_name(eval_dir: Path) -> None:
    from lm_eval.utils import get_file_datetime, get_latest_filename, get_results_filenames, sanitize_model_name

    files = every_file(eval_dir)
    (results,) = get_results_filenames(files)
    assert Path(results).parent == eval_dir / sanitize_model_name(MODEL) == eval_dir / "openai__gpt-4o"
    assert get_latest_filename([results]) == results
    assert set(read_samples(eval_dir)) == {"custom_odd", "custom_even"}
    dates = {get_file_datetime(Path(name).name) for name in files if "/openai__gpt-4o/samples_" in name}
    assert len(dates) == 1 and Path(results).name == f"results_{dates.pop()}.json"  # one run, one date
    # our richer files stay beside them
    assert {"results.json", "results.jsonl", "summary.json", "manifest.json"} <= {p.name for p in eval_dir.iterdir()}


def test_make_table_renders_the_results_and_the_groups(eval_dir: Path) -> None:
    from lm_eval.utils import get_results_filenames, make_table

    results = json.loads(Path(get_results_filenames(every_file(eval_dir))[0]).read_text())
    tasks, groups = make_table(results), make_table(results, "groups")
    rows = [line.split("|") for line in tasks.splitlines()]
    accuracy = {row[1].strip(" -"): row[7].strip() for row in rows if len(row) > 7 and row[5].strip() == "acc"}
    assert accuracy == {"custom": "0.6000", "even": "0.6667", "odd": "0.5000"}  # p5 failed: no verdict
    assert "|custom|" in groups.replace(" ", "") and "0.6000" in groups
    assert results["model_name"] == MODEL and results["model_name_sanitized"] == "openai__gpt-4o"
    assert results["model_source"] == "maps-autogen"
    # a config for the group and for every subtask (lm-eval's W&B logger reads each subtask's)
    assert set(results["configs"]) == {"custom", "custom_odd", "custom_even"}
    assert all(results["configs"][task]["group"] == "custom" for task in ("custom_odd", "custom_even"))


def test_the_samples_carry_lm_evals_keys_and_hashes(eval_dir: Path) -> None:
    from lm_eval.utils import get_results_filenames, hash_string

    samples = read_samples(eval_dir)
    results = json.loads(Path(get_results_filenames(every_file(eval_dir))[0]).read_text())
    keys = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics", "doc_hash",
            "prompt_hash", "target_hash", "acc"}
    for task, rows in samples.items():
        for row in rows:
            assert keys <= set(row)
            assert row["doc_hash"] == hash_string(json.dumps(row["doc"], indent=2, ensure_ascii=False))
            assert row["prompt_hash"] == hash_string(row["arguments"][0][0])
            assert row["target_hash"] == hash_string(str(row["target"]))
            assert row["arguments"][0][0].startswith(f"[q:{row['pid']}]")  # the problem's text
        # lm-eval's per-task hash, as its EvaluationTracker computes it from the samples
        assert results["task_hashes"][task] == hash_string("".join(r["doc_hash"] + r["prompt_hash"] + r["target_hash"]
                                                                   for r in rows))
        # the mean of the samples' acc is the task's accuracy
        assert round(sum(r["acc"] for r in rows) / len(rows), 6) == results["results"][task]["acc,none"]
    assert [row["pid"] for row in samples["custom_odd"]] == ["p1", "p3"]  # p5 failed: no sample
    assert [row["doc_id"] for row in samples["custom_odd"]] == [0, 1]
    assert [(row["pid"], row["acc"]) for row in samples["custom_even"]] == [("p2", 1.0), ("p4", 1.0), ("p6", 0.0)]


def test_lm_evals_wandb_logger_logs_our_results_and_samples_offline(eval_dir: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import wandb
    from lm_eval.loggers import WandbLogger
    from lm_eval.utils import get_results_filenames

    for name in list(os.environ):
        if name.startswith("WANDB_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    results = json.loads(Path(get_results_filenames(every_file(eval_dir))[0]).read_text())
    logger = WandbLogger(init_args={"project": "maps-lm-eval", "dir": str(tmp_path)})
    try:
        logger.post_init(results)
        logger.log_eval_result()
        logger.log_eval_samples(read_samples(eval_dir))  # every subtask has its config: no KeyError
    finally:
        wandb.finish()
        wandb.teardown()
    (run_file,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    assert run_file.stat().st_size > 0


def test_the_model_folder_is_one_plain_name_inside_the_eval_folder() -> None:
    """A model name is a setting or a gateway's name: whatever it holds, its folder is lm-eval's
    sanitized name when that is one plain folder name, never a path out, a hidden name or one of ours."""
    from lm_eval.utils import sanitize_model_name

    from maps_autogen.eval import model_folder_name

    assert model_folder_name("openai/gpt-4o") == sanitize_model_name("openai/gpt-4o")
    for hostile in ("..", ".", "../../etc", "a/../../b", "x\nnewline", "problems", "results.json", "m" * 300, ""):
        name = model_folder_name(hostile)
        assert name and "/" not in name and not name.startswith(".") and len(name) <= 120, (hostile, name)
        assert name not in ("problems", "results.json", "results.jsonl", "summary.json", "manifest.json"), hostile


def test_the_tracker_attaches_the_files_lm_eval_finds_and_no_symlink(eval_dir: Path, tmp_path: Path) -> None:
    """`maps eval --track` attaches the lm-eval files where they were written (lm-eval's finders
    find the same ones), and a link planted among them (a tampered folder) is never attached."""
    import shutil

    from lm_eval.utils import get_results_filenames, get_sample_results_filenames

    from maps_autogen.report._tracking import tracked

    copy = tmp_path / "eval"
    shutil.copytree(eval_dir, copy, symlinks=True)
    found = {Path(name) for name in [*get_results_filenames(every_file(copy)),
                                     *get_sample_results_filenames(every_file(copy))]}
    assert len(found) == 3  # the results and the two subsets' samples
    secret = tmp_path / "secret.txt"
    secret.write_text("not for a tracker")
    planted = copy / "openai__gpt-4o" / "samples_custom_odd_2020-01-01T00-00-00.jsonl"
    planted.symlink_to(secret)
    attached = tracked(copy).artifacts
    assert found <= set(attached)
    assert planted not in attached and all(not path.is_symlink() for path in attached)
