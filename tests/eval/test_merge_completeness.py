"""`maps merge` knows the data set it merges: a missing shard or problem is named and refused
(or written, with --allow-incomplete, as complete: false with the missing ids), never averaged
away; shards of other data, selections or splits, and two folders of one shard, are refused;
every verdict is scored again from its recorded answer; a shard another process writes is
refused; a merge killed midway leaves nothing the next merge does not clear."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from maps_autogen._util._runlock import RunLock
from tests.helpers.common import REPO, TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, wait_for, write_custom_jsonl
from tests.helpers.fake_openai import FakeOpenAI

IDS = [f"p{n}" for n in range(1, 7)]  # shard 1/3: p1 p4; 2/3: p2 p5; 3/3: p3 p6


def shard_run(work: Path, name: str, data: Path, server: FakeOpenAI, *options: str) -> Path:
    runs = work / name
    done = run_maps(["eval", "custom", "--data", str(data), "--runs-dir", str(runs), "--no-cache", "--quiet", *options],
                    env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=work)
    assert done.returncode == 0, done.stderr
    return next(runs.glob("eval-*"))


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three shards of six custom problems, a whole run, and shards that do not belong with them."""
    work = tmp_path_factory.mktemp("merge")
    data, answers = write_custom_jsonl(work / "data", 6)
    edited, _ = write_custom_jsonl(work / "edited", 6)
    rows = [json.loads(line) for line in edited.read_text().splitlines()]
    rows[0]["answer"] = 4  # p1's gold: in shard 1's share, so shard 3's own rows do not show it
    edited.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with FakeOpenAI(ProblemScript(answers)) as server:
        runs = {f"{n}/3": shard_run(work, f"shard{n}", data, server, "--shard", f"{n}/3") for n in (1, 2, 3)}
        runs["whole"] = shard_run(work, "whole", data, server)
        runs["other data 3/3"] = shard_run(work, "edited", edited, server, "--shard", "3/3")
        runs["limited 3/3"] = shard_run(work, "limited", data, server, "--shard", "3/3", "--limit", "5")
        runs["1/2"] = shard_run(work, "halves", data, server, "--shard", "1/2")
        port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    return {"work": work, "data": data, "answers": answers, "runs": runs, "port": port}


def merge(tmp_path: Path, *folders: Path, extra: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "merged"
    return run_maps(["merge", *map(str, folders), "--out", str(out), *extra], env=clean_env(), cwd=tmp_path), out


def rows_of(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def summary_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text())


def refused(result: subprocess.CompletedProcess[str], out: Path, *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
    assert all(word in result.stderr for word in words), result.stderr
    assert not out.exists()


def copy(folder: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(folder, tmp_path / name))


def rewrite(folder: Path, change: Any) -> None:
    rows = {row["pid"]: row for row in rows_of(folder)}
    change(rows)
    (folder / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows.values()))


def test_a_missing_shard_is_named_and_never_averaged_away(shards: dict[str, Any], tmp_path: Path) -> None:
    runs = shards["runs"]
    result, out = merge(tmp_path, runs["1/3"], runs["2/3"])
    refused(result, out, "the merge would be incomplete", "2 of the evaluation's 6 problems have no result",
            "shard 3/3 was not passed (2 problems)", "--allow-incomplete")

    written, out = merge(tmp_path, runs["1/3"], runs["2/3"], extra=("--allow-incomplete",))
    assert written.returncode == 0, written.stderr
    assert "note: incomplete" in written.stderr and "shard 3/3 was not passed" in written.stderr
    assert "(incomplete: see summary.json's missing)" in written.stdout
    summary = summary_of(out)
    assert summary["complete"] is False and summary["missing"] == ["p3", "p6"]
    assert summary["average"]["n"] == 4  # what ran, said apart from what is missing
    assert json.loads((out / "manifest.json").read_text())["ids"] == IDS  # the evaluation's problems, all of them
    # A resume of the merged folder runs what is missing, and only that.
    with FakeOpenAI(ProblemScript(shards["answers"]), port=shards["port"]) as server:  # the run's base_url
        # In a process of its own, as a user runs it: nothing of this test process's earlier
        # commands (connection pools to an earlier server on this port) carries over.
        resumed = run_maps(["eval", "custom", "--resume", str(out), "--no-cache", "--quiet"],
                           env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path,
                           process=True)
        asked = {ProblemScript({})._pid(request) for request in server.received}
    assert resumed.returncode == 0, resumed.stderr
    assert asked == {"p3", "p6"}, (resumed.stdout, resumed.stderr)
    assert summary_of(out)["complete"] is True and summary_of(out)["missing"] == []
    assert summary_of(out)["average"] == summary_of(runs["whole"])["average"]


def test_a_shard_stopped_before_some_problems_is_named_with_them(shards: dict[str, Any], tmp_path: Path) -> None:
    runs = shards["runs"]
    stopped = copy(runs["2/3"], tmp_path, "stopped")
    rewrite(stopped, lambda rows: rows.pop("p5"))
    result, out = merge(tmp_path, runs["1/3"], stopped, runs["3/3"])
    refused(result, out, "1 of the evaluation's 6 problems have no result", f"shard 2/3 ({stopped})",
            "no result for 1 of its 2 problems", "'p5'")


def test_shards_that_do_not_belong_together_are_refused(shards: dict[str, Any], tmp_path: Path) -> None:
    runs = shards["runs"]
    again = copy(runs["2/3"], tmp_path, "again")
    result, out = merge(tmp_path, runs["1/3"], runs["2/3"], again, runs["3/3"])
    refused(result, out, str(runs["2/3"]), str(again), "are both shard 2/3")
    result, out = merge(tmp_path, runs["1/3"], runs["2/3"], runs["other data 3/3"])
    refused(result, out, "ran on different data", "1 problem(s) differ", "'p1'")
    result, out = merge(tmp_path, runs["1/3"], runs["2/3"], runs["limited 3/3"])
    refused(result, out, "different selections of problems")
    result, out = merge(tmp_path, runs["1/3"], runs["1/2"])
    refused(result, out, "split the evaluation differently")
    # A shard whose problems are not its share of the selection it records (edited by hand).
    moved = copy(runs["3/3"], tmp_path, "moved")
    manifest = json.loads((moved / "manifest.json").read_text())
    manifest["shard"] = "2/3"
    (moved / "manifest.json").write_text(json.dumps(manifest))
    result, out = merge(tmp_path, runs["1/3"], moved)
    refused(result, out, "its problems are not shard 2/3 of the selection it records")


def test_every_verdict_is_scored_again_from_its_recorded_answer(shards: dict[str, Any], tmp_path: Path) -> None:
    runs = shards["runs"]
    assert {row["pid"]: row["correct"] for row in rows_of(runs["3/3"])} == {"p3": False, "p6": False}
    lying = copy(runs["3/3"], tmp_path, "lying")

    def claim_right(rows: dict[str, Any]) -> None:
        rows["p3"]["correct"] = True
        rows["p3"]["prediction"] = "9"

    rewrite(lying, claim_right)
    result, out = merge(tmp_path, runs["1/3"], runs["2/3"], lying)
    assert result.returncode == 0, result.stderr
    assert "note: 1 row(s) recorded another verdict than their answer scores" in result.stderr and "'p3'" in result.stderr
    assert summary_of(out)["average"] == summary_of(runs["whole"])["average"]  # 4 of 6, as the whole run
    assert next(row for row in rows_of(out) if row["pid"] == "p3")["correct"] is False

    # Gold moved to match the answer: refused (the shard recorded another gold for p3).
    shutil.rmtree(out)
    forged = copy(runs["3/3"], tmp_path, "forged")

    def forge(rows: dict[str, Any]) -> None:
        rows["p3"]["gold"] = "10"
        rows["p3"]["scoring"]["answer"] = "10"
        rows["p3"]["correct"] = True

    rewrite(forged, forge)
    result, out = merge(tmp_path, runs["1/3"], runs["2/3"], forged)
    refused(result, out, "the gold answer or scoring fields of the row of problem 'p3' differ")


def test_a_complete_merge_equals_the_whole_run(shards: dict[str, Any], tmp_path: Path) -> None:
    runs = shards["runs"]
    result, out = merge(tmp_path, runs["3/3"], runs["1/3"], runs["2/3"])
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    volatile = {"seconds", "run_dir", "usage", "usage_by_role"}
    assert [{k: v for k, v in row.items() if k not in volatile} for row in rows_of(out)] == \
        [{k: v for k, v in row.items() if k not in volatile} for row in rows_of(runs["whole"])]
    merged, whole = summary_of(out), summary_of(runs["whole"])
    assert merged["complete"] is True and merged["missing"] == [] and merged["subsets"] == whole["subsets"]


def test_a_shard_being_written_is_refused_and_none_is_written_while_merging(shards: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    runs = shards["runs"]
    live = copy(runs["2/3"], tmp_path, "live")
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, pathlib; from maps_autogen._util._runlock import RunLock\n"
                               "lock = RunLock(pathlib.Path(sys.argv[1])); lock.acquire(); print('held', flush=True)\n"
                               "sys.stdin.read()", str(live)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result, out = merge(tmp_path, runs["1/3"], live, runs["3/3"])
        refused(result, out, f"{live} is being written by another maps process (pid {holder.pid})")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    # While a merge reads a shard (its shared lock), a writer (a --resume) is refused.
    with RunLock(live, shared=True):
        with pytest.raises(Exception, match="is being read by another maps process"):
            RunLock(live).acquire()


def test_a_merge_killed_midway_leaves_a_folder_the_next_merge_removes(shards: dict[str, Any], tmp_path: Path) -> None:
    """kill -9 while the merged folder is being built (inside the one builder, _folders.folder_built_beside);
    a build still running beside the same --out is left alone."""
    runs = shards["runs"]
    out = tmp_path / "merged"
    build = ("import os, signal, sys, pathlib\n"
             "from maps_autogen._util._folders import folder_built_beside\n"
             "with folder_built_beside(pathlib.Path(sys.argv[1]), fix='') as building:\n"
             "    (building / 'half-written').write_text('x')\n"
             "    print(building, flush=True)\n"
             "    if sys.argv[2] == 'die':\n"
             "        os.kill(os.getpid(), signal.SIGKILL)\n"
             "    sys.stdin.read()\n")
    killed = subprocess.run([sys.executable, "-c", build, str(out), "die"], capture_output=True, text=True, cwd=REPO,
                            timeout=60)
    assert killed.returncode == -signal.SIGKILL
    abandoned = Path(killed.stdout.strip())
    assert abandoned.is_dir() and abandoned.parent == tmp_path
    running = subprocess.Popen([sys.executable, "-c", build, str(out), "live"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert running.stdout is not None
        in_use = Path(running.stdout.readline().strip())
        result, _ = merge(tmp_path, runs["1/3"], runs["2/3"], runs["3/3"])
        assert result.returncode == 0, result.stderr
        assert not abandoned.exists() and in_use.is_dir()  # the dead build removed, the live one kept
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["merged", in_use.name])
    finally:
        assert running.stdin is not None
        running.stdin.close()
        running.wait(timeout=30)
    wait_for(lambda: not in_use.exists(), "the live build to remove its folder")


def test_a_resume_of_an_incomplete_merge_sees_an_edited_missing_problem(shards: dict[str, Any], tmp_path: Path) -> None:
    """The selection records what each problem's steps are shown: a merge without shard 3/3 keeps
    it for p3 and p6, so a resume of the merged folder after p3's question was edited says so."""
    runs = shards["runs"]
    written, out = merge(tmp_path, runs["1/3"], runs["2/3"], extra=("--allow-incomplete",))
    assert written.returncode == 0, written.stderr
    shown = json.loads((out / "manifest.json").read_text())["settings"]["data"]["shown"]
    assert sorted(shown) == IDS  # the missing problems' too
    data: Path = shards["data"]
    original = data.read_text()
    rows = [json.loads(line) for line in original.splitlines()]
    (p3,) = [row for row in rows if row["id"] == "p3"]
    p3["question"] = str(p3["question"]) + " (edited)"
    try:
        data.write_text("".join(json.dumps(row) + "\n" for row in rows))
        with FakeOpenAI(ProblemScript(shards["answers"]), port=shards["port"]) as server:
            resumed = run_maps(["eval", "custom", "--resume", str(out), "--no-cache", "--quiet"],
                               env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)
    finally:
        data.write_text(original)
    # Refused, naming the edit (as for a folder never merged), and nothing ran.
    assert resumed.returncode == 2 and "Traceback" not in resumed.stderr, resumed.stderr
    assert "questions, contexts, options or images of 1 id, e.g. p3" in resumed.stderr, resumed.stderr
    assert not server.received
