"""The one schema module: every file a run writes reads back into its model (every field
declared, nothing undeclared written), a file from a newer maps-autogen or with an unknown
field is one line naming the file (an earlier version's: tests/records/test_schema_version.py),
and the stop reasons are defined once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maps_autogen._util._errors import DataError
from maps_autogen.records import _schema as records
from maps_autogen.records._chat_records import EventRecord, MessageRecord, TranscriptLineModel
from maps_autogen.records._run_files import parsed, read_manifest, read_run, read_summary, read_transcript
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("records")
    data, rows = write_mathvista_jsonl(tmp / "data", 3)
    answers = {pid: ("B" if row["question_type"] == "multi_choice" else row["answer"]) for pid, row in rows.items()}
    with FakeOpenAI(ProblemScript(answers, critic_low={"2"})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp / "runs"), "--concurrency", "2"], env=env, cwd=tmp)
    assert result.returncode == 0, result.stderr
    return next(path for path in (tmp / "runs").iterdir() if path.name.startswith("eval-"))


def test_every_file_an_eval_writes_reads_back_into_its_model_and_holds_only_what_it_declares(eval_run: Path) -> None:
    manifest = read_manifest(eval_run)
    assert manifest.team is not None and manifest.team.reviewer == "critic" and manifest.team.final_step == "solver"
    summary = read_summary(eval_run)
    assert summary.average.scored == 3 and summary.feedback_shares["solver"] == round(1 / 3, 4)
    rows = [records.ResultRow.model_validate(json.loads(line)) for line in (eval_run / "results.jsonl").read_text().splitlines()]
    assert {row.pid for row in rows} == {"1", "2", "3"} and all(row.status == "ok" for row in rows)
    rolled = next(row for row in rows if row.pid == "2")
    assert rolled.feedback_step == "solver" and rolled.critic_scores[0] == {"caption": 5, "alignment": 5, "knowledge": 5, "solution": 2}
    assert '"solution": 2}' in (eval_run / "results.jsonl").read_text()  # a score stays as given, never 2.0
    for pid in ("1", "2", "3"):
        run = read_run(eval_run / "problems" / pid)
        assert run.status == "finished" and run.evaluation is not None and run.evaluation.correct is True
        lines = read_transcript(eval_run / "problems" / pid)
        assert isinstance(lines[0], MessageRecord) and isinstance(lines[-1], EventRecord) and lines[-1].event == "stop"
        assert [line.index for line in lines] == list(range(len(lines)))
    # Dumped back, each file has exactly the keys its writer recorded (no default filled in).
    written = json.loads((eval_run / "manifest.json").read_text())
    assert records.dumped(manifest) == written


def test_a_newer_or_foreign_file_is_one_line_naming_it(eval_run: Path, tmp_path: Path) -> None:
    newer = tmp_path / "newer"
    newer.mkdir()
    manifest = json.loads((eval_run / "manifest.json").read_text())
    (newer / "manifest.json").write_text(json.dumps({**manifest, "schema_version": records.SCHEMA_VERSION + 1}))
    with pytest.raises(DataError) as raised:
        read_manifest(newer)
    assert str(newer / "manifest.json") in str(raised.value) and "newer maps-autogen" in str(raised.value)
    assert "upgrade maps-autogen" in raised.value.fix
    result = run_maps(["report", str(newer)], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "newer maps-autogen" in result.stderr
    (newer / "manifest.json").write_text(json.dumps({**manifest, "surprise": 1}))
    with pytest.raises(DataError, match="surprise: extra inputs are not permitted"):
        read_manifest(newer)


def test_the_vocabularies_are_defined_once() -> None:
    from maps_autogen.settings import _roles as roles

    assert not hasattr(roles, "STOP_REASONS")
    assert records.STOP_REASONS == ("critic_passed", "rollback_limit", "critic_unparseable", "max_rounds", "error", "interrupted",
                                    "user_stopped", "no_reviewer")
    with pytest.raises(DataError, match="does not match any of the expected tags"):
        parsed(TranscriptLineModel, {"schema_version": records.SCHEMA_VERSION, "type": "event", "event": "no_such_event"},
               source="a line")
