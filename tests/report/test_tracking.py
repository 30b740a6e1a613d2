"""`maps eval --track wandb|mlflow` offline, read back with the trackers' own readers: W&B's offline
run file (its records parsed with wandb's own protobuf schema, tests/helpers/wandb_records.py) and an
MLflow file store through MLflow's tracking client. Settings as config, accuracy per subset with its
interval, rollbacks per problem, the Critic's score distribution, tokens, cached share and cost as
metrics, results and report as artifacts; no secret reaches either; a missing client is one line
naming the extra."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_custom_jsonl
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.wandb_records import read_offline_run

HEADER_SECRET = "hdr-secret-value-0123456789"  # a credential header's value: masked wherever it could show


def tracked_eval(tmp_path: Path, kind: str, **env: str) -> tuple[Path, dict[str, Any]]:
    """`maps eval custom --track KIND` on 4 problems (p2 rolled back once, p3 answered wrong); its folder
    and results.json."""
    data, answers = write_custom_jsonl(tmp_path / "data", 4)
    config = write_config(tmp_path / "agents.yaml", **{"endpoints.openai.headers": {"X-Api-Key": HEADER_SECRET}})
    with FakeOpenAI(ProblemScript(answers, critic_low={"p2"})) as server:
        done = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--no-cache",
                         "--quiet", "--config", str(config), "--track", kind],
                        env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, **env), cwd=tmp_path,
                        process=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("note: logged to") for line in done.stdout.splitlines()), done.stdout
    (folder,) = (tmp_path / "runs").glob("eval-*")
    return folder, json.loads((folder / "results.json").read_text())


def no_secret_in(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert TEST_KEY.encode() not in data and HEADER_SECRET.encode() not in data, path


def expected_metrics(results: dict[str, Any]) -> dict[str, float]:
    figures = {}
    for task, alias in (("custom", "all"), ("custom_odd", "odd"), ("custom_even", "even")):
        entry = results["results"][task]
        figures |= {f"acc/{alias}": entry["acc,none"], f"acc_ci95_lower/{alias}": entry["acc_ci95_lower,none"],
                    f"acc_ci95_upper/{alias}": entry["acc_ci95_upper,none"]}
    return figures


# every review of the 4 problems: p2's first review scores the solution 2, the 4 others all 5s
SCORES = {"critic_scores/alignment/5": 5.0, "critic_scores/knowledge/5": 5.0, "critic_scores/solution/5": 4.0,
          "critic_scores/solution/2": 1.0}


def test_wandb_offline_run_holds_the_settings_metrics_and_artifacts(tmp_path: Path) -> None:
    folder, results = tracked_eval(tmp_path, "wandb", WANDB_MODE="offline", WANDB_DIR=str(tmp_path),
                                   WANDB_PROJECT="maps-test")
    (run_file,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    run = read_offline_run(run_file)
    assert run.config["eval_id"] == folder.name and run.config["benchmark"] == "custom"
    assert run.config["model"] == "gpt-4o" and run.config["task"]["subsets"] == ["odd", "even"]
    assert run.config["gen_kwargs"]["solver"]["temperature"] == 0.0
    assert expected_metrics(results).items() <= run.summary.items()
    assert SCORES.items() <= run.summary.items()
    summary = json.loads((folder / "summary.json").read_text())
    usage = summary["usage"]
    assert run.summary["tokens/prompt"] == usage["prompt_tokens"] and run.summary["cost_usd"] == usage["cost"]
    assert run.summary["tokens/cached_share"] == 0.0 and run.summary["rollbacks/mean"] == 0.25
    assert [row["problem/rollbacks"] for row in run.history if "problem/rollbacks" in row] == [0, 1, 0, 0]
    kinds = {kind: files for kind, files in run.artifacts.values()}
    assert {"results.json", "summary.json", "manifest.json", "results.jsonl"} <= set(kinds["eval_results"])
    assert any(name.startswith("gpt-4o/samples_custom_odd_") for name in kinds["eval_results"])
    assert {"report.md", "table1.md"} <= set(kinds["report"])
    no_secret_in(tmp_path / "wandb")


def test_mlflow_file_store_holds_the_settings_metrics_and_artifacts(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # current MLflow reads a file store only when told

    store = (tmp_path / "mlruns").as_uri()
    folder, results = tracked_eval(tmp_path, "mlflow", MLFLOW_TRACKING_URI=store, MLFLOW_ALLOW_FILE_STORE="true",
                                   MLFLOW_EXPERIMENT_NAME="maps-test")
    client = MlflowClient(tracking_uri=store)
    experiment = client.get_experiment_by_name("maps-test")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == folder.name
    assert run.data.params["benchmark"] == "custom" and run.data.params["model"] == "gpt-4o"
    assert run.data.params["gen_kwargs.solver.temperature"] == "0.0"
    assert expected_metrics(results).items() <= run.data.metrics.items()
    assert SCORES.items() <= run.data.metrics.items()
    history = client.get_metric_history(run.info.run_id, "problem/rollbacks")
    assert [(point.step, point.value) for point in sorted(history, key=lambda p: p.step)] == [
        (0, 0.0), (1, 1.0), (2, 0.0), (3, 0.0)]
    results_files = {item.path for item in client.list_artifacts(run.info.run_id, "results")}
    assert {"results/results.json", "results/summary.json", "results/results.jsonl"} <= results_files
    assert {item.path for item in client.list_artifacts(run.info.run_id, "report")} >= {"report/report.md"}
    assert "config.json" in {item.path for item in client.list_artifacts(run.info.run_id)}
    no_secret_in(tmp_path / "mlruns")


@pytest.mark.parametrize("kind, package", [("wandb", "wandb"), ("mlflow", "mlflow-skinny")])
def test_a_missing_client_is_one_line_naming_the_extra_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, package: str) -> None:
    monkeypatch.setitem(sys.modules, kind, None)  # as if not installed: importlib finds no such module
    data, _ = write_custom_jsonl(tmp_path / "data", 2)
    with FakeOpenAI() as server:
        done = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--track", kind],
                        env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url), cwd=tmp_path)
        assert not server.received  # refused before any call
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.strip()][:1]
    assert f"--track {kind} needs the {package} package" in line and "maps-autogen[track]" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_the_api_takes_track(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import maps_autogen
    from maps_autogen._util import UsageError

    monkeypatch.setitem(sys.modules, "mlflow", None)
    with pytest.raises(UsageError, match="needs the mlflow-skinny package"):
        maps_autogen.evaluate("custom", data=tmp_path / "none.jsonl", track="mlflow")
