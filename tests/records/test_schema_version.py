"""Run files carry a schema version, and a file from another version is refused in one line:
every reader of every file we write (run.json, transcript.jsonl, results.jsonl, manifest.json,
summary.json, the batch records) and every command that reads them (`maps view`, `maps report`,
`maps merge`, `maps eval --resume`) say that an earlier version of maps-autogen wrote it and what
to do (run it again, or read it with that version): exit 2, no traceback, nothing written.

tests/fixtures/runs/eval-schema-v1/ is a real eval folder (2 MathVista problems, one rolled back)
written by the tree before schema version 2 (commit fb4b612, against the scripted server), less
lm-eval's files and the response cache, which maps never reads back as run files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from maps_autogen._util._errors import DataError
from maps_autogen.model import read_batch_records
from maps_autogen.records import BatchAnswer, BatchRecord, dumped
from maps_autogen.records._run_files import (
    iter_result_rows,
    iter_transcript,
    read_manifest,
    read_result_rows,
    read_run,
    read_summary,
    read_transcript,
    read_transcript_from,
)
from maps_autogen.records._schema import SCHEMA_VERSION
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import write_mathvista_jsonl

EARLIER = Path(__file__).parents[1] / "fixtures" / "runs" / "eval-schema-v1"
SAID = f"was written by an earlier version of maps-autogen (schema version 1; this one reads version {SCHEMA_VERSION})"


@pytest.fixture
def earlier(tmp_path: Path) -> Path:
    """A copy of the earlier version's eval folder (a reader that wrote into it would show)."""
    return Path(shutil.copytree(EARLIER, tmp_path / "eval-earlier"))


def contents(folder: Path) -> dict[Path, bytes]:
    return {path.relative_to(folder): path.read_bytes() for path in folder.rglob("*") if path.is_file()
            and path.name != ".lock"}


def test_the_fixture_is_an_earlier_version_s_whole_eval() -> None:
    manifest = json.loads((EARLIER / "manifest.json").read_text())
    assert manifest["schema_version"] == 1 and manifest["ids"] == ["1", "2"]
    rollback = [json.loads(line) for line in (EARLIER / "problems" / "2" / "transcript.jsonl").read_text().splitlines()
                if '"event": "rollback"' in line]
    assert rollback and all(line["schema_version"] == 1 for line in rollback)


READERS: dict[str, tuple[Callable[[Path], Any], str]] = {
    "read_run": (lambda run: read_run(run / "problems" / "2"), "problems/2/run.json"),
    "read_manifest": (read_manifest, "manifest.json"),
    "read_summary": (read_summary, "summary.json"),
    "read_transcript": (lambda run: read_transcript(run / "problems" / "2"), "problems/2/transcript.jsonl record 1"),
    "iter_transcript": (lambda run: next(iter_transcript(run / "problems" / "1")), "problems/1/transcript.jsonl record 1"),
    "read_transcript_from": (lambda run: read_transcript_from(run / "problems" / "2" / "transcript.jsonl"),
                             "problems/2/transcript.jsonl record 1"),
    "read_result_rows": (lambda run: read_result_rows(run / "results.jsonl"), "results.jsonl line 1"),
    "iter_result_rows": (lambda run: next(iter_result_rows(run / "results.jsonl")), "results.jsonl line 1"),
}


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_refuses_a_file_an_earlier_version_wrote_in_one_line(earlier: Path, reader: str) -> None:
    read, source = READERS[reader]
    with pytest.raises(DataError) as raised:
        read(earlier)
    message = str(raised.value)
    assert f"{earlier / source}" in message and SAID in message, message
    assert raised.value.fix is not None and "run it again with this version" in raised.value.fix
    assert "the version that wrote it" in raised.value.fix and "\n" not in message


def test_the_batch_records_refuse_an_earlier_version_s_record(tmp_path: Path) -> None:
    batches = tmp_path / "eval" / "batches"
    batches.mkdir(parents=True)
    record = BatchRecord(number=1, round=1, endpoint="openai", model="gpt-4o", service="https://api.openai.com/v1",
                         custom_ids=["solver-abc-0"], status="completed", answers_read=True)
    (batches / "batch-0001.json").write_text(json.dumps({**dumped(record), "schema_version": 1}))
    answer = BatchAnswer(custom_id="solver-abc-0", status_code=200, body={})
    (batches / "batch-0001.answers.jsonl").write_text(json.dumps(dumped(answer)) + "\n")
    with pytest.raises(DataError, match=r"batch-0001\.json was written by an earlier version of maps-autogen"):
        read_batch_records(tmp_path / "eval")
    (batches / "batch-0001.json").write_text(json.dumps(dumped(record)))
    assert read_batch_records(tmp_path / "eval")[0] == [record]
    (batches / "batch-0001.answers.jsonl").write_text(json.dumps({**dumped(answer), "schema_version": 1}) + "\n")
    with pytest.raises(DataError, match=r"batch-0001\.answers\.jsonl was written by an earlier version"):
        read_batch_records(tmp_path / "eval")


def test_a_file_without_a_schema_version_is_refused_as_not_ours(earlier: Path) -> None:
    run = earlier / "problems" / "1" / "run.json"
    run.write_text(json.dumps({key: value for key, value in json.loads(run.read_text()).items()
                               if key != "schema_version"}))
    with pytest.raises(DataError, match=r"run\.json records no schema version \(every version of maps-autogen writes "
                                        r"one\): it is damaged or was not written by maps-autogen"):
        read_run(run.parent)


def test_every_command_refuses_an_earlier_version_s_run_folder_in_one_line(earlier: Path, tmp_path: Path) -> None:
    data, _ = write_mathvista_jsonl(tmp_path / "data", 2)
    before = contents(earlier)
    env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # nothing may be called
    commands = {
        "view": (["view", str(earlier), "--out", str(tmp_path / "view")], "manifest.json"),
        "view of a problem": (["view", str(earlier / "problems" / "2"), "--out", str(tmp_path / "view")],
                              "problems/2/run.json"),
        "report": (["report", str(earlier), "--out", str(tmp_path / "report")], "manifest.json"),
        "merge": (["merge", str(earlier), "--out", str(tmp_path / "merged")], "manifest.json"),
        "resume": (["eval", "mathvista", "--data", str(data), "--resume", str(earlier)], "manifest.json"),
    }
    for name, (args, source) in commands.items():
        result = run_maps(args, env=env, cwd=tmp_path)
        assert result.returncode == 2, (name, result.stderr)
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, (name, result.stderr)
        assert f"{earlier / source} {SAID}" in result.stderr and "run it again with this version" in result.stderr
    assert not any((tmp_path / name).exists() for name in ("view", "report", "merged"))
    assert contents(earlier) == before
