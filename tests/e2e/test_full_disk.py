"""A full disk: every write we make (the one atomic writer, image files, the appends to
results.jsonl and transcript.jsonl) fails cleanly with one line naming the folder and the space
needed, leaves no torn line, no half file and no temporary file, and a resumed eval recovers.

The disk is made full by an injected ENOSPC at the one place every byte we write passes
(`artifacts._write`), after part of the write went through, as a real full disk does it.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from maps_autogen._util import _artifacts as artifacts
from maps_autogen._util._errors import DiskFullError
from maps_autogen.eval import ResultsLog
from maps_autogen.orchestration._transcript import RunWriter
from maps_autogen.records._chat_records import StopEvent
from maps_autogen.records._schema import ResultRow
from tests.helpers.common import TEST_KEY, clean_env
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.inprocess import run_in_process


class FullDisk:
    """`artifacts._write` on a disk that fills up: once `full()` says so for a file, half of
    each write goes through and the rest fails with ENOSPC."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, full: Callable[[Path], bool]):
        self.full = full
        self.refused = 0
        real = artifacts._write

        def write(fd: int, data: bytes) -> None:
            path = Path(os.readlink(f"/proc/self/fd/{fd}"))
            if not self.full(path):
                return real(fd, data)
            self.refused += 1
            os.write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(artifacts, "_write", write)


def row(pid: str) -> ResultRow:
    return ResultRow(pid=pid, status="ok", correct=True, response="The answer is " + "7" * 200, scoring={})


def test_the_atomic_writer_leaves_the_old_file_and_no_temporary_file(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    target = tmp_path / "run" / "summary.json"
    artifacts.write_json_atomic(target, {"accuracy": 50.0})
    FullDisk(monkeypatch, lambda path: True)
    with pytest.raises(DiskFullError) as raised:
        artifacts.write_json_atomic(target, {"accuracy": 75.0, "note": "x" * 3000})
    assert json.loads(target.read_text()) == {"accuracy": 50.0}
    assert sorted(p.name for p in target.parent.iterdir()) == ["summary.json"]
    message = str(raised.value)
    assert f"no space left to write in {target.parent}: about 3." in message and "KB more needed" in message
    assert "free" in message and "\n" not in message


def test_an_image_is_never_left_half_written(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    FullDisk(monkeypatch, lambda path: True)
    with pytest.raises(DiskFullError, match="about 5.0 KB more needed"):
        artifacts.write_bytes_file(tmp_path / "images" / "image-1.png", b"\x89PNG" + b"\0" * 5116)
    assert list((tmp_path / "images").iterdir()) == []


def test_an_append_is_whole_or_not_there(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = ResultsLog(tmp_path / "results.jsonl")
    log.append(row("1"))
    writer = RunWriter(tmp_path / "solve")
    writer.append(StopEvent(stop_reason="critic_passed"))
    before = {path: path.read_bytes() for path in (log.path, tmp_path / "solve" / "transcript.jsonl")}
    disk = FullDisk(monkeypatch, lambda path: True)
    with pytest.raises(DiskFullError, match="no space left to write in"):
        log.append(row("2"))
    with pytest.raises(DiskFullError, match="no space left to write in"):
        writer.append(StopEvent(stop_reason="max_rounds"))
    writer.close()
    assert disk.refused == 2
    assert {path: path.read_bytes() for path in before} == before  # the half lines were cut off again
    assert list(log.read()) == ["1"]


@pytest.fixture
def mathvista(tmp_path: Path) -> Iterator[tuple[Path, FakeOpenAI, dict[str, str]]]:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 5)
    answers = {pid: "B" if r["question_type"] == "multi_choice" else r["answer"] for pid, r in rows.items()}
    with FakeOpenAI(ProblemScript(answers)) as server:
        yield data, server, clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)


def test_an_eval_on_a_full_disk_stops_in_one_line_and_a_resume_recovers(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mathvista: tuple[Path, FakeOpenAI, dict[str, str]]) -> None:
    data, server, env = mathvista
    runs = tmp_path / "runs"
    appended: list[Path] = []

    def full(path: Path) -> bool:  # the disk fills up as the second problem's result is written
        if path.name == "results.jsonl":
            appended.append(path)
        return len(appended) >= 2 and path.is_relative_to(runs)

    disk = FullDisk(monkeypatch, full)
    args = ["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--workers", "1", "--concurrency", "2"]
    result = run_in_process(args, env=env, cwd=tmp_path, timeout=300, stdin=None)
    run = next(p for p in runs.iterdir() if p.name.startswith("eval-"))
    assert result.returncode == 1 and disk.refused >= 1, result.stderr
    line = result.stderr.strip().splitlines()[-1]  # after the announcement: the one error line
    assert result.stderr.count("error:") == 1
    assert line.startswith(f"error: no space left to write in {run}: about ") and "more needed" in line, line
    assert f"then continue with: maps eval mathvista --resume {run}" in line and "Traceback" not in result.stderr
    written = (run / "results.jsonl").read_bytes()
    assert written.endswith(b"\n") and len(written.splitlines()) == 1  # the first problem's line, whole
    json.loads(written)
    assert not [p for p in run.rglob("*.tmp")] and not (run / "summary.json").exists()
    for transcript in run.glob("problems/*/transcript.jsonl"):
        assert transcript.read_bytes().endswith(b"\n") or not transcript.read_bytes()

    monkeypatch.undo()  # there is room again
    resumed = run_in_process(["eval", "mathvista", "--data", str(data), "--resume", str(run)], env=env, cwd=tmp_path,
                             timeout=300, stdin=None)
    assert resumed.returncode == 0, resumed.stderr
    rows = [json.loads(text) for text in (run / "results.jsonl").read_text().splitlines()]
    assert sorted(r["pid"] for r in rows) == ["1", "2", "3", "4", "5"] and all(r["status"] == "ok" for r in rows)
    assert json.loads((run / "summary.json").read_text())["average"]["scored"] == 5


def test_a_solve_on_a_full_disk_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            mathvista: tuple[Path, FakeOpenAI, dict[str, str]]) -> None:
    _, _, env = mathvista
    runs = tmp_path / "runs"
    turns: list[Path] = []

    def full(path: Path) -> bool:  # the disk fills up during the chat, at its third turn
        if path.name == "transcript.jsonl":
            turns.append(path)
        return len(turns) >= 3 and path.is_relative_to(runs)

    FullDisk(monkeypatch, full)
    result = run_in_process(["solve", "--quiet", "-q", "How many?", "--runs-dir", str(runs)], env=env, cwd=tmp_path,
                            timeout=300, stdin=None)
    (run,) = runs.iterdir()
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: no space left to write in {run}: about ")
    transcript = (run / "transcript.jsonl").read_bytes()
    assert transcript.endswith(b"\n") and len(transcript.splitlines()) == 2  # the turns before, whole
    assert not list(run.rglob("*.tmp"))
