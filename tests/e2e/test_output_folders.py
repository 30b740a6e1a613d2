"""Every output a command writes (`maps report --out`, `maps merge --out`, `maps view --out`, a
page file, `maps score --out`) is built beside its target and moved in whole: on a real full
disk (a small tmpfs mounted in a mount namespace of its own, as root, as CI runs) each is one
line and exit 1, and leaves nothing behind, no half folder, no temporary; and a folder we did
not write is never emptied (a user's files in it are kept: the command refuses in one line)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.common import MAPS, TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two shards of a MathVista eval, the whole eval, a solve run and a results file to score."""
    work = tmp_path_factory.mktemp("outputs")
    data, rows = write_mathvista_jsonl(work / "mathvista", 4)
    answers = {pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()}
    with FakeOpenAI(ProblemScript(answers)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        for name, extra in (("shard1", ["--shard", "1/2"]), ("shard2", ["--shard", "2/2"]), ("whole", [])):
            result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(work / name), "--quiet",
                               *extra], env=env, cwd=work)
            assert result.returncode == 0, result.stderr
        solved = run_maps(["solve", "-q", "How many?", "--runs-dir", str(work / "solve"), "--quiet"], env=env, cwd=work)
        assert solved.returncode == 0, solved.stderr
    scored = work / "responses.jsonl"  # far more than the full disk holds, every line scored
    scored.write_text("".join(json.dumps({**row, "response": f"The answer is {row['answer']}. " + "x" * 200}) + "\n"
                              for _ in range(50) for row in rows.values()))
    folders = {name: next(path for path in (work / name).iterdir() if not path.name.startswith("."))
               for name in ("shard1", "shard2", "whole", "solve")}
    yield {"work": work, "responses": scored, **folders}


def on_a_full_disk(args: list[str], out_dir: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`maps ARGS` with `out_dir` a 16 KB file system of its own (tmpfs, in a mount namespace that
    ends with the command); what the command left in it."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        message = "needs root and unshare(1) to mount a small file system"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI runs as root", pytrace=False)
        pytest.skip(message)
    out_dir.mkdir()
    left = tmp_path / "left.txt"
    script = ('mount -t tmpfs -o size=16k tmpfs "$0" || exit 99; "$@"; code=$?; ls -A "$0" > "$LEFT"; '
              'df -k "$0" >> "$LEFT"; exit $code')
    result = subprocess.run(["unshare", "--mount", "sh", "-c", script, str(out_dir), *MAPS, *args],
                            env={**clean_env(), "LEFT": str(left)}, capture_output=True, text=True, timeout=300)
    assert result.returncode != 99, result.stderr
    listing = left.read_text().splitlines()
    return result, listing[: next(n for n, line in enumerate(listing) if line.startswith("Filesystem"))]


@pytest.mark.parametrize("command", ["report", "merge", "view folder", "view page", "score"])
def test_every_output_on_a_full_disk_is_one_line_exit_1_and_leaves_nothing(runs: dict[str, Any], tmp_path: Path,
                                                                         command: str) -> None:
    out_dir = tmp_path / "full"
    target = out_dir / "out"
    args = {
        "report": ["report", str(runs["whole"]), "--out", str(target)],
        "merge": ["merge", str(runs["shard1"]), str(runs["shard2"]), "--out", str(target)],
        "view folder": ["view", str(runs["whole"]), "--out", str(target)],
        "view page": ["view", str(runs["whole"]), "--out", str(out_dir / "page.html")],
        "score": ["score", "mathvista", str(runs["responses"]), "--out", str(out_dir / "scored.jsonl")],
    }[command]
    result, left = on_a_full_disk(args, out_dir, tmp_path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"error: no space left to write in {out_dir}"), lines[0]
    assert left == [], left  # no half folder, no half file, no temporary


def test_a_folder_we_did_not_write_is_never_emptied(runs: dict[str, Any], tmp_path: Path) -> None:
    env = clean_env()
    report = tmp_path / "report"
    first = run_maps(["report", str(runs["whole"]), "--out", str(report)], env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = run_maps(["report", str(runs["whole"]), "--paper", "--out", str(report)], env=env, cwd=tmp_path)
    assert again.returncode == 0 and (report / "table1_paper.md").is_file()  # an earlier report: replaced
    (report / "my notes.md").write_text("keep me")
    for args in (["report", str(runs["whole"]), "--out", str(report)],
                 ["view", str(runs["whole"]), "--out", str(report)],
                 ["merge", str(runs["shard1"]), str(runs["shard2"]), "--out", str(report)]):
        result = run_maps(args, env=env, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        [line] = result.stderr.strip().splitlines()
        assert "never emptied" in line and (args[0] != "report" or "(e.g. my notes.md)" in line), line
        assert (report / "my notes.md").read_text() == "keep me" and (report / "table1_paper.md").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["report"]  # nothing left beside it
