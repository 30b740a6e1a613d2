"""`maps eval --resume` keeps to the run's verdict settings (team, prompts, review, models, JSON
mode, server URL, method, data): another one is refused with one line naming it and the flag;
with --allow-change the manifest records each change and which problems ran under it, and the
summary and Table 1 say that the run mixes settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers.common import REPO, TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_cli import eval_dir_of, results, scripted_answers
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI


def _args(data: Path | None, runs: Path, *extra: str) -> list[str]:
    return ["eval", "mathvista", *(["--data", str(data)] if data else []), "--runs-dir", str(runs), *extra]


def _env(url: str) -> dict[str, str]:
    return clean_env(OPENAI_BASE_URL=url, OPENAI_API_KEY=TEST_KEY)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def _with_gold(rows: dict, folder: Path, changed: dict[str, str]) -> Path:
    """A copy of the data set (same ids, same images) whose gold answers differ for `changed`."""
    data, _ = write_mathvista_jsonl(folder, len(rows))
    lines = [json.loads(line) for line in data.read_text().splitlines()]
    data.write_text("".join(json.dumps({**row, "answer": changed.get(row["pid"], row["answer"])}) + "\n" for row in lines))
    return data


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """One finished two-problem run, its data and the live server it ran against."""
    home = tmp_path_factory.mktemp("resume-settings")
    data, rows = write_mathvista_jsonl(home / "two", 2)
    write_config(home / "agents.yaml")
    with FakeOpenAI(ProblemScript(scripted_answers(rows))) as server:
        first = run_maps(_args(data, home / "runs"), env=_env(server.base_url), cwd=home)
        assert first.returncode == 0, first.stderr
        yield home, data, rows, server, eval_dir_of(home / "runs")


def _edit_scholar_prompt(folder: Path) -> None:
    """prompts/scholar.yaml beside the config (it wins over the built-in one the run used, under
    the same name in agents.yaml), with one more sentence in its instruction."""
    prompt = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "prompts" / "scholar.yaml").read_text())
    prompt["instruction"] += "\nAlso name the units of every quantity."
    (folder / "prompts").mkdir()
    (folder / "prompts" / "scholar.yaml").write_text(yaml.safe_dump(prompt))


RENAMED = {  # scholar becomes expert, and the steps that read it follow
    "team.steps.2.name": "expert",
    "team.steps.3.inputs": ["question", "options", "interpreter", "aligner", "expert", "answer_format"],
    "team.steps.4.inputs": ["interpreter", "aligner", "expert", "solver"],
    "team.steps.4.reviews": ["interpreter", "aligner", "expert", "solver"],
}


# (case, extra arguments, config changes, another server URL, what the one error line names)
CASES = [
    ("team", ["--team", "big_five"], {}, False, "team.steps[0].personality"),
    ("threshold", ["--threshold", "3"], {}, False, "review.threshold 5.0 → 3.0"),
    ("max-rollbacks", ["--max-rollbacks", "1"], {}, False, "review.max_rollbacks 3 → 1"),
    ("json-mode", [], {"endpoints.openai.json_mode": "object"}, False, "models.*.json_mode schema → object (5 roles)"),
    ("server", [], {}, True, "models.*.base_url"),
    ("prompt", [], {}, False, "team.steps[2].prompt"),  # same file name, other content
    ("personality", [], {"team.steps.1.personality": "Neuroticism: you doubt."}, False, "team.steps[1].personality"),
    ("renamed", [], RENAMED, False, "team.steps[2].name scholar → expert"),
    ("gold", ["--data", "GOLD"], {}, False, "data (gold answers or scoring fields of 1 id)"),
    ("seed", ["--seed", "4"], {}, False, "models.*.seed"),  # the sampling settings every step sends
    ("every-step", [], {"every_step.top_p": 0.5}, False, "models.*.top_p"),
    ("prompt-layout", [], {"endpoints.openai.prompt_layout": "paper"}, False, "models.*.prompt_layout"),
]


@pytest.mark.parametrize("case, extra, changes, other_server, named", CASES, ids=[case[0] for case in CASES])
def test_a_resume_under_other_settings_is_refused_with_one_line_before_any_call(finished_run, tmp_path: Path, case, extra, changes,
                                                                              other_server, named) -> None:
    home, data, rows, server, run_dir = finished_run
    if case == "prompt":
        _edit_scholar_prompt(tmp_path)
    config = write_config(tmp_path / "agents.yaml", **changes)
    extra = [str(_with_gold(rows, tmp_path / "gold", {"1": "7"})) if arg == "GOLD" else arg for arg in extra]
    manifest_before = (run_dir / "manifest.json").read_bytes()
    sent = len(server.received)
    url = "http://127.0.0.1:9/v1" if other_server else server.base_url
    resumed = run_maps(_args(None, home / "runs", "--resume", str(run_dir), "--config", str(config), *extra), env=_env(url), cwd=tmp_path)
    errors = _errors(resumed.stderr)
    assert resumed.returncode == 2 and "Traceback" not in resumed.stderr
    assert len(errors) == 1 and named in errors[0], resumed.stderr
    assert f"{run_dir} was run with other settings" in errors[0] and "--allow-change" in errors[0]
    assert len(server.received) == sent  # refused before any model call
    assert (run_dir / "manifest.json").read_bytes() == manifest_before  # nothing recorded


def test_an_allowed_change_is_recorded_with_the_problems_run_under_it(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "three", 3)
    write_config(tmp_path / "agents.yaml", **{"endpoints.openai.max_retries": 0})
    runs = tmp_path / "runs"
    with FakeOpenAI(ProblemScript(scripted_answers(rows), fail={"2", "3"})) as server:
        env = _env(server.base_url)
        # One at a time: problem 1 finishes before 2 and 3 fail with the same service error
        # (which stops the run), so 2 and 3 are the ones left to run.
        first = run_maps(_args(data, runs, "--concurrency", "1"), env=env, cwd=tmp_path)
        assert first.returncode == 1
        run_dir = eval_dir_of(runs)
        # The data file changed on disk (another gold answer for problem 3): caught without --data.
        lines = [json.loads(line) for line in data.read_text().splitlines()]
        data.write_text("".join(json.dumps({**row, "answer": "blue"} if row["pid"] == "3" else row) + "\n" for row in lines))
        sent = len(server.received)
        on_disk = run_maps(_args(None, runs, "--resume", str(run_dir)), env=env, cwd=tmp_path)
        assert on_disk.returncode == 2 and "data (gold answers or scoring fields of 1 id)" in _errors(on_disk.stderr)[0], on_disk.stderr
        assert len(server.received) == sent
        # Allowed: the new threshold and gold are recorded; the pending problems 2 and 3 run under them.
        server.script = ProblemScript(scripted_answers(rows))
        allowed = run_maps(_args(None, runs, "--resume", str(run_dir), "--threshold", "4", "--allow-change"), env=env, cwd=tmp_path)
        assert allowed.returncode == 0, allowed.stderr
        again = run_maps(_args(None, runs, "--resume", str(run_dir), "--threshold", "4"), env=env, cwd=tmp_path)
        sent_since = len(server.received) - sent
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (change,) = manifest["changes"]
    assert change["differences"] == ["review.threshold", "data (gold answers or scoring fields of 1 id)"]
    assert change["from"]["review.threshold"] == 5.0 and change["to"]["review.threshold"] == 4.0
    assert list(change["to"]["data (gold answers or scoring fields of 1 id)"]) == ["3"]
    assert change["settings"] == 1 and change["pids"] == ["2", "3"]
    assert manifest["settings"]["review"]["threshold"] == 4.0 and manifest["config"]["critic"]["threshold"] == 4.0
    rows_now = {row["pid"]: row for row in results(run_dir)}
    assert {pid: row["settings"] for pid, row in rows_now.items()} == {"1": 0, "2": 1, "3": 1}
    assert rows_now["3"]["gold"] == "blue" and rows_now["1"]["gold"] == rows["1"]["answer"]
    assert json.loads((run_dir / "summary.json").read_text())["mixed_settings"] is True
    assert "mixed settings" in allowed.stdout  # Table 1's row
    assert "note: the scored problems ran under different settings" in allowed.stdout
    # The run now carries the changed settings: resuming under them is no change, and just works.
    assert again.returncode == 0 and "other settings" not in again.stderr, again.stderr
    assert sent_since == 2 * 5  # problems 2 and 3 under the allowed change; nothing for the last resume
    assert len(json.loads((run_dir / "manifest.json").read_text())["changes"]) == 1


def test_differences_are_named_by_part_and_a_damaged_manifest_is_one_line_not_a_crash(tmp_path: Path) -> None:
    from maps_autogen._util._errors import DataError, UsageError
    from maps_autogen.eval._verdict_settings import differences, resume_under, summary_line
    from maps_autogen.records._run_files import read_manifest
    from maps_autogen.records._schema import SCHEMA_VERSION, Manifest, SelectionRecord
    from maps_autogen.records._verdict_settings import VerdictSettings

    before = VerdictSettings.model_validate(
        {"method": "maps", "review": {"threshold": 5.0}, "team": {"steps": [{"name": "a", "personality": "calm"}]},
         "data": {"count": 2, "sha256": "x", "gold": {"1": "aa", "2": "bb"}, "shown": {}}})
    after = VerdictSettings.model_validate(
        {"method": "maps", "review": {"threshold": 3.0}, "team": {"steps": [{"name": "a", "personality": "two\nlines"}]},
         "data": {"count": 2, "sha256": "y", "gold": {"1": "aa", "2": "cc"}, "shown": {}}})
    found = differences(before, after)
    assert [d.name for d in found] == ["review.threshold", "data (gold answers or scoring fields of 1 id)", "team.steps[0].personality"]
    # A value that is not one plain line is named, never printed (the refusal stays one line).
    assert summary_line(found) == "review.threshold 5.0 → 3.0, data (gold answers or scoring fields of 1 id), team.steps[0].personality"
    refused_run = Manifest(benchmark="mathvista", settings=VerdictSettings(data=before.data),
                           selection=SelectionRecord(ids=["1", "2"], scoring=before.data.gold, shown={}))
    with pytest.raises(UsageError) as refused:
        resume_under(refused_run, after, {}, run="runs/x", allow_change=False, now="now")
    assert "\n" not in str(refused.value) and "data (gold answers or scoring fields of 1 id)" in str(refused.value)
    # Damaged settings are one line naming the file and the setting when the manifest is read, never a crash later.
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"schema_version": SCHEMA_VERSION, "benchmark": "mathvista", "selection": {"ids": [], "scoring": {}, "shown": {}},
         "settings": {"data": {"gold": ["not", "a", "mapping"]}, "models": "nonsense", "review": 7}}))
    with pytest.raises(DataError) as damaged:
        read_manifest(tmp_path)
    assert "\n" not in str(damaged.value) and "manifest.json: settings." in str(damaged.value)


def test_the_data_fingerprint_covers_every_field_scoring_reads_not_only_the_gold() -> None:
    """A custom row whose tolerance changed (same id, same gold) scores differently: a resume
    must see it, as it sees another gold answer."""
    from maps_autogen.eval._verdict_settings import data_fingerprint, differences
    from maps_autogen.problem._tasks import EvalItem
    from maps_autogen.records._verdict_settings import VerdictSettings

    def item(tolerance: float) -> EvalItem:
        record = {"id": "q2", "answer": "12", "answer_type": "number", "tolerance": tolerance, "subset": "all"}
        return EvalItem(pid="q2", subset="all", load_problem=lambda: None, record=record, gold="12")  # type: ignore[arg-type,return-value]

    before, after = data_fingerprint([item(0.0)]), data_fingerprint([item(1.0)])
    assert before.sha256 != after.sha256
    found = differences(VerdictSettings(data=before), VerdictSettings(data=after))
    assert [d.name for d in found] == ["data (gold answers or scoring fields of 1 id)"]
    assert data_fingerprint([item(0.0)]) == before  # stable


@pytest.mark.parametrize("option", [["--rules", "legacy"], ["--limit", "1"], ["--sample-seed", "3"], ["--shard", "1/2"],
                                    ["--subset", "general-vqa"], ["--sample", "1"]])
def test_resume_refuses_options_its_manifest_fixes(finished_run, option: list[str]) -> None:
    """--rules, --limit, --sample, --sample-seed, --subset and --shard would be ignored on --resume (the
    manifest fixes the problems and the rules): refused in one line, nothing sent."""
    home, data, rows, server, run_dir = finished_run
    sent = len(server.received)
    result = run_maps(_args(None, home / "runs", "--resume", str(run_dir), *option), env=_env(server.base_url), cwd=home)
    assert result.returncode == 2, result.stderr
    (line,) = _errors(result.stderr)
    assert option[0] in line and "cannot change a resumed run" in line
    assert len(server.received) == sent
