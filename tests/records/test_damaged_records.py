"""A damaged record in the middle of a file we wrote, or a number past Python's digit limit in
one, stops every reader with one line naming the file and the line (exit 2, no traceback, nothing
written): `maps view`, `maps report`, `maps merge` and `--resume`, never a line dropped or a
problem quietly run again; the data set's row check and a problem file do the same for theirs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from maps_autogen._util._artifacts import iter_jsonl, read_jsonl_from
from maps_autogen._util._errors import DataError
from maps_autogen.records._run_files import read_result_rows
from maps_autogen.records._schema import SCHEMA_VERSION
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI

# What an edit or a bad disk leaves in line 2 of 3, and the words that name it.
DAMAGE = {
    "cut short": (lambda line: line[: len(line) // 2], "not valid JSON"),
    "a number past the digit limit": (lambda line: line[:-1] + ', "note": ' + "8" * 4400 + "}", "4,300 digits"),
    "not a record": (lambda line: '["a list", 2]', "a JSON list, not a record"),
    "a record without an id": (lambda line: json.dumps({k: v for k, v in json.loads(line).items() if k != "pid"}),
                               "pid"),
}


@pytest.fixture(scope="module")
def finished_eval(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, FakeOpenAI]]:
    """A finished 3-problem MathVista eval (its folder and its data file), and the server it
    ran against (a resume under the same settings reads the results before any call)."""
    tmp = tmp_path_factory.mktemp("damaged")
    data, rows = write_mathvista_jsonl(tmp / "mathvista", 3)
    answers = {pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()}
    with FakeOpenAI(ProblemScript(answers)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp / "runs")], env=env, cwd=tmp)
        assert result.returncode == 0, result.stderr
        yield next(p for p in (tmp / "runs").iterdir() if p.name.startswith("eval-")), data, server


def damaged_copy(finished: Path, where: Path, kind: str) -> Path:
    run = where / "eval-damaged"
    shutil.copytree(finished, run)
    path = run / "results.jsonl"
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    lines[1] = DAMAGE[kind][0](lines[1])
    path.write_text("\n".join(lines) + "\n")
    return run


def assert_one_line_naming_line_2(result: object, run: Path, kind: str) -> None:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.returncode == 2, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert f"{run / 'results.jsonl'} line 2" in stderr and DAMAGE[kind][1] in stderr, stderr


@pytest.mark.parametrize("kind", DAMAGE)
def test_every_reader_stops_at_a_damaged_middle_line_naming_it(
        finished_eval: tuple[Path, Path, FakeOpenAI], tmp_path: Path, kind: str) -> None:
    finished, data, server = finished_eval
    run = damaged_copy(finished, tmp_path, kind)
    before = contents(run)
    calls = len(server.received)
    env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
    commands = {
        "view": ["view", str(run), "--out", str(tmp_path / "view")],
        "report": ["report", str(run), "--out", str(tmp_path / "report")],
        "merge": ["merge", str(run), "--out", str(tmp_path / "merged")],
        "resume": ["eval", "mathvista", "--data", str(data), "--resume", str(run)],
    }
    for name, args in commands.items():
        result = run_maps(args, env=env, cwd=tmp_path)
        assert_one_line_naming_line_2(result, run, kind)
        assert not (tmp_path / name).exists() or name == "resume"
    # No call was made, nothing was written into the run: the damaged line stays for the user to repair.
    assert len(server.received) == calls
    assert contents(run) == before


def contents(run: Path) -> dict[Path, bytes]:
    """Every file of a run folder (but its lock) and its bytes."""
    return {path.relative_to(run): path.read_bytes() for path in run.rglob("*") if path.is_file()
            and path.name != ".lock"}


def test_the_live_viewer_reports_the_line_instead_of_skipping_it(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    row = f'"schema_version": {SCHEMA_VERSION}, "status": "ok", "scoring": {{}}'
    path.write_text(f'{{"pid": "1", {row}}}\n{{"pid": "2", "sta\n{{"pid": "3", {row}}}\n')
    for start in (0, path.read_text().index('{"pid": "2"')):
        with pytest.raises(DataError, match=r"results\.jsonl line 2 is not a JSON record"):
            read_result_rows(path, start)
    with pytest.raises(DataError, match=r"results\.jsonl line 2"):
        list(iter_jsonl(path))
    # The torn tail of a line still being written is not damage.
    path.write_text(f'{{"pid": "1", {row}}}\n{{"pid": "2", "sta')
    assert [row.pid for row in read_result_rows(path)[0]] == ["1"]
    assert read_jsonl_from(path, 10**40) == ([], 10**40)  # a hostile offset reads nothing


def test_the_row_check_names_a_row_with_a_number_past_the_digit_limit(tmp_path: Path) -> None:
    data = tmp_path / "bench.jsonl"
    data.write_text(json.dumps({"id": "a", "question": "q", "answer": "1"}) + "\n"
                    + '{"id": "b", "question": "q", "answer": ' + "6" * 4400 + "}\n")
    result = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(tmp_path / "runs")],
                      env=clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL="http://127.0.0.1:9/v1"), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{data} line 2 holds a number with more than 4,300 digits" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_problem_file_with_a_number_past_the_digit_limit_is_one_line(tmp_path: Path) -> None:
    problem = tmp_path / "problem.yaml"
    problem.write_text("question: How many?\noptions: [0x" + "f" * 5000 + ", 2]\n")
    result = run_maps(["solve", "--problem", str(problem)], env=clean_env(OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "line 2" in result.stderr and "a number of more than 4,000 characters" in result.stderr


@pytest.mark.parametrize("out", ["site", "page.html"])
def test_maps_view_of_an_eval_with_a_damaged_problem_transcript_is_one_line_exit_2(
        finished_eval: tuple[Path, Path, FakeOpenAI], tmp_path: Path, out: str) -> None:
    """docs/untrusted-content.md: a damaged transcript stops `maps view` as a damaged results line
    does (the served pages show the other problems, and the damaged one's error, instead)."""
    finished, _, _ = finished_eval
    run = tmp_path / "eval-damaged"
    shutil.copytree(finished, run)
    (transcript,) = sorted(run.glob("problems/*/transcript.jsonl"))[:1]
    lines = transcript.read_text().splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]
    transcript.write_text("\n".join(lines) + "\n")
    result = run_maps(["view", str(run), "--out", str(tmp_path / out)], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"{transcript} line 2 is not a JSON record" in result.stderr, result.stderr
    assert not (tmp_path / out).exists()
