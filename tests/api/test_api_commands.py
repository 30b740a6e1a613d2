"""The Python API covers every `maps` command: evaluate, merge, report, view (written and
served), score and config, and reads back what they wrote with the typed readers; `score`'s
LLM extraction opens the final step's backend alone (no team, no AG2)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import maps_autogen
from maps_autogen.records._chat_records import MessageRecord
from tests.helpers.common import TEST_KEY, api_service, clean_env
from tests.helpers.eval_fixtures import ProblemScript, write_custom_jsonl
from tests.helpers.fake_openai import FakeOpenAI, Reply

PIDS = ["p1", "p2", "p3", "p4"]


@pytest.fixture
def data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    path, answers = write_custom_jsonl(tmp_path / "data", len(PIDS))
    with api_service(monkeypatch, tmp_path, ProblemScript(answers)):
        yield path


def test_every_command_from_python(data: Path, tmp_path: Path) -> None:
    halves = [maps_autogen.evaluate("custom", data=data, shard=f"{n}/2", workers=1, cache=False,
                                    runs_dir=tmp_path / "runs") for n in (1, 2)]
    merged = maps_autogen.merge([half.eval_dir for half in halves], out=tmp_path / "merged")
    assert merged.out == tmp_path / "merged"
    summary = maps_autogen.read_summary(merged.out)
    assert summary.complete and summary.average.scored == len(PIDS)
    assert maps_autogen.read_manifest(merged.out).ids == PIDS
    rows = {row.pid: row for row in maps_autogen.read_results(merged.out)}
    assert sorted(rows) == PIDS and rows["p3"].correct is False and rows["p1"].correct is True  # p3's answer is off
    p1 = merged.out / (rows["p1"].run_dir or "")
    assert maps_autogen.read_run(p1).final_answer is not None
    assert any(isinstance(record, MessageRecord) and record.role == "solver"
               for record in maps_autogen.read_transcript(p1))

    report = maps_autogen.write_report([merged.out], out=tmp_path / "report")
    assert (tmp_path / "report" / "table1.md") in report.files and report.markdown.startswith("# MAPS report")

    page = maps_autogen.write_view(merged.out, out=tmp_path / "view.html")
    assert page == tmp_path / "view.html" and "p4" in page.read_text()
    server = maps_autogen.serve_view(merged.out, port=0).start()
    try:
        with urllib.request.urlopen(server.url, timeout=60) as answer:
            assert answer.status == 200 and "p4" in answer.read().decode()
    finally:
        server.close()

    effective = maps_autogen.effective_config(model="my-model", temperature=0.5)
    assert effective.resolution is not None and effective.not_runnable is None
    assert {model.model for model in effective.resolution.models.values()} == {"my-model"}
    assert "temperature: 0.5" in effective.text


def test_score_from_python(tmp_path: Path) -> None:
    lines = [{"pid": "1", "question_type": "free_form", "answer_type": "integer", "precision": None, "choices": None,
              "answer": "7", "response": "The answer is 7."},
             {"pid": "2", "question_type": "free_form", "answer_type": "integer", "precision": None, "choices": None,
              "answer": "5", "response": "The answer is 6."}]
    source = tmp_path / "outputs.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = maps_autogen.score("mathvista", source)
    assert report.out_path == tmp_path / "outputs.scored.jsonl" and report.overall.scored == 2
    assert [json.loads(line)["correct"] for line in report.out_path.read_text().splitlines()] == [True, False]


# `maps_autogen.score(..., llm_extract=True)` in a fresh process: which of our modules it loaded.
SCORE_WITH_EXTRACTION = """
import json, sys
import maps_autogen
report = maps_autogen.score("mathvista", sys.argv[1], llm_extract=True)
print(json.dumps({"modules": sorted(sys.modules), "scored": report.overall.scored}))
"""


def test_llm_extraction_opens_the_final_steps_backend_alone(tmp_path: Path) -> None:
    source = tmp_path / "outputs.jsonl"
    source.write_text(json.dumps({"pid": "1", "question_type": "free_form", "answer_type": "integer",
                                  "precision": None, "choices": None, "answer": "12",
                                  "response": "The quantity is roughly a dozen."}) + "\n")
    with FakeOpenAI(lambda request: Reply("12")) as server:
        done = subprocess.run([sys.executable, "-c", SCORE_WITH_EXTRACTION, str(source)], cwd=tmp_path, timeout=120,
                              env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY),
                              capture_output=True, text=True)
        roles = [request.role for request in server.received]
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout)
    assert loaded["scored"] == 1 and roles == ["extractor"]
    assert "autogen" not in loaded["modules"] and "maps_autogen.orchestration._chat" not in loaded["modules"]
