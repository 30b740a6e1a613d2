"""Ids from data rows and result rows never become paths of their own: every problem gets its
own folder strictly inside `problems/` (whatever its id: `..`, `.`, `a/b`, NUL, very long, ids
that differ only by case or by characters that are not kept), nothing of the run is deleted by a
path built from data, and `maps view` reads nothing outside the run folder or from another
problem's folder. The real `maps` command against the scripted server."""

from __future__ import annotations

import http.client
import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from maps_autogen.records._safe_paths import is_component, safe_component
from maps_autogen.report.view import ViewServer
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps
from tests.helpers.eval_fixtures import ProblemScript
from tests.helpers.fake_openai import FakeOpenAI

# Ids an attacker would choose: path components, separators, a NUL and a control character,
# a name too long for a file system, ids equal but for case, ids that lose the same characters,
# an id that looks like another's changed name, and a name Windows reserves.
HOSTILE_IDS = ["..", "a/b", ".", "../x", "x" * 300, "Ab", "ab", "a?b", "a*b", "a_b", "a\x00b", "a\x1bb", "con",
               "a_b-" + safe_component("a/b").rsplit("-", 1)[1], "/etc/passwd", "sub\\dir"]


def write_hostile_data(folder: Path) -> Path:
    """A MathVista JSONL whose pids are HOSTILE_IDS; each question carries the tag q<n>."""
    folder.mkdir(parents=True, exist_ok=True)
    make_png(folder / "figure.png")
    with open(folder / "testmini.jsonl", "w") as handle:
        for number, pid in enumerate(HOSTILE_IDS, start=1):
            handle.write(json.dumps({
                "pid": pid, "question": f"[q:q{number}] What is shown?", "image": "figure.png", "choices": None,
                "unit": None, "precision": None, "answer": "2", "question_type": "free_form", "answer_type": "integer",
                "metadata": {"category": "math-targeted-vqa" if number % 2 else "general-vqa"}, "query": "What is shown?",
            }) + "\n")
    return folder / "testmini.jsonl"


def tag_of(pid: str) -> str:
    return f"q{HOSTILE_IDS.index(pid) + 1}"


def rows_of(eval_dir: Path) -> dict[str, dict[str, Any]]:
    return {row["pid"]: row for row in map(json.loads, (eval_dir / "results.jsonl").read_text().splitlines())}


def tree(folder: Path) -> set[str]:
    """Every path under `folder`."""
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Path]]:
    """The hostile data set run in two shards: (work folder, data file, shard folders)."""
    work = tmp_path_factory.mktemp("hostile")
    data = write_hostile_data(work / "data")
    (work / "runs").mkdir()
    (work / "runs" / "sentinel.txt").write_text("a sibling of the eval folders\n")
    before = tree(work)
    with FakeOpenAI(ProblemScript({tag_of(pid): "2" for pid in HOSTILE_IDS})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        folders = []
        for shard in ("1/2", "2/2"):
            runs = work / "runs" / f"shard{shard[0]}"
            result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--shard", shard, "--no-cache",
                               "--concurrency", "4"], env=env, cwd=work)
            assert result.returncode == 0, result.stderr
            folders.append(next(runs.glob("eval-*")))
    # Nothing outside the eval folders was written or deleted.
    evals = [str(folder.relative_to(work)) for folder in folders]
    new = tree(work) - before
    assert before <= tree(work) and {path for path in new if not path.startswith(tuple(f"{top}/" for top in evals))} == {
        "runs/shard1", "runs/shard2", *evals}
    return work, data, folders


def assert_own_folders(eval_dir: Path, pids: list[str]) -> None:
    """Each problem has its own folder strictly inside problems/, holding its own run."""
    assert (eval_dir / "manifest.json").is_file() and (eval_dir / "summary.json").is_file()
    rows = rows_of(eval_dir)
    assert sorted(rows) == sorted(pids) and all(row["status"] == "ok" for row in rows.values())
    folders = sorted((eval_dir / "problems").iterdir())
    assert len(folders) == len(pids) and all(folder.is_dir() and not folder.is_symlink() for folder in folders)
    names = [folder.name for folder in folders]
    assert all(is_component(name) and len(name) <= 100 for name in names)
    assert len({name.lower() for name in names}) == len(names)  # distinct on a case-insensitive file system too
    for pid, row in rows.items():
        folder = eval_dir / row["run_dir"]
        assert folder.parent == eval_dir / "problems" and folder.name == safe_component(pid)
        assert json.loads((folder / "run.json").read_text())["pid"] == pid
        assert f"[q:{tag_of(pid)}]" in (folder / "transcript.jsonl").read_text()


def test_hostile_ids_get_their_own_folders_and_resume_replaces_only_their_own(shards, tmp_path: Path) -> None:
    work, data, folders = shards
    manifests = [json.loads((folder / "manifest.json").read_text()) for folder in folders]
    assert sorted(manifests[0]["ids"] + manifests[1]["ids"]) == sorted(HOSTILE_IDS)
    for folder, manifest in zip(folders, manifests):
        assert_own_folders(folder, manifest["ids"])
    assert (work / "runs" / "sentinel.txt").is_file()

    # A problem in flight when the run was killed: its row missing, its folder half-written.
    # `..` and `.` are both in the first shard: resume must replace exactly `..`'s folder.
    eval_dir = shutil.copytree(folders[0], tmp_path / "runs" / folders[0].name)
    ids = manifests[0]["ids"]
    assert {"..", "."} <= set(ids)
    lines = (eval_dir / "results.jsonl").read_text().splitlines()
    (eval_dir / "results.jsonl").write_text("".join(line + "\n" for line in lines if json.loads(line)["pid"] != ".."))
    (eval_dir / "problems" / safe_component("..") / "half-written").write_text("left by the killed run\n")
    (eval_dir / "problems" / safe_component(".") / "kept").write_text("another problem's file\n")
    with FakeOpenAI(ProblemScript({tag_of(pid): "2" for pid in HOSTILE_IDS})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        # --allow-change: a new scripted server has another URL, which is another setting.
        resumed = run_maps(["eval", "mathvista", "--data", str(data), "--resume", str(eval_dir), "--no-cache", "--allow-change",
                            "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
        asked = len(server.received)
    assert resumed.returncode == 0, resumed.stderr
    assert asked == 5  # one problem's chat: only `..` ran again
    assert_own_folders(eval_dir, ids)
    assert not (eval_dir / "problems" / safe_component("..") / "half-written").exists()
    assert (eval_dir / "problems" / safe_component(".") / "kept").is_file()

    # The exported pages: one per problem, each its own file in problems/.
    site = run_maps(["view", str(eval_dir), "--out", str(tmp_path / "site")], env=clean_env(), cwd=tmp_path)
    assert site.returncode == 0, site.stderr
    pages = sorted(path.name for path in (tmp_path / "site" / "problems").iterdir())
    assert pages == sorted(f"{safe_component(pid)}.html" for pid in ids)

    # Tampered problem folders are never removed: one a link to a folder elsewhere, one holding
    # another problem's run. Their problems fail with one line; nothing else is touched.
    linked, taken = ids[2], ids[3]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "precious.txt").write_text("not the eval's\n")
    shutil.rmtree(eval_dir / "problems" / safe_component(linked))
    (eval_dir / "problems" / safe_component(linked)).symlink_to(outside, target_is_directory=True)
    shutil.rmtree(eval_dir / "problems" / safe_component(taken))
    shutil.copytree(eval_dir / "problems" / safe_component("."), eval_dir / "problems" / safe_component(taken))
    lines = (eval_dir / "results.jsonl").read_text().splitlines()
    (eval_dir / "results.jsonl").write_text("".join(line + "\n" for line in lines if json.loads(line)["pid"] not in (linked, taken)))
    with FakeOpenAI(ProblemScript({})) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        tampered = run_maps(["eval", "mathvista", "--data", str(data), "--resume", str(eval_dir), "--no-cache", "--allow-change",
                             "--runs-dir", str(tmp_path / "runs")], env=env, cwd=tmp_path)
        assert len(server.received) == 0
    assert tampered.returncode == 1 and "Traceback" not in tampered.stderr, tampered.stderr
    rows = rows_of(eval_dir)
    assert rows[linked]["status"] == "failed" and "not a folder of its own" in rows[linked]["error"]
    assert rows[taken]["status"] == "failed" and "holds another problem" in rows[taken]["error"]
    assert (outside / "precious.txt").is_file() and (eval_dir / "problems" / safe_component(taken) / "kept").is_file()


def test_view_reads_no_other_folder_and_names_a_tampered_line(shards, tmp_path: Path) -> None:
    _, _, folders = shards
    eval_dir = shutil.copytree(folders[0], tmp_path / "run")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "run.json").write_text(json.dumps({"pid": "..", "run_id": "x"}))
    (outside / "transcript.jsonl").write_text(json.dumps({"type": "message", "role": "solver", "agent": "Solver",
                                                          "content": "SECRET FROM OUTSIDE"}) + "\n")
    rows = list(rows_of(eval_dir).values())
    first, second, third = rows[0], rows[1], rows[2]
    other_tag = f"[q:{tag_of(second['pid'])}]"
    first["run_dir"] = second["run_dir"]  # another problem's folder: its transcript must not show as this one's
    third["run_dir"] = "../outside"
    (eval_dir / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = run_maps(["view", str(eval_dir), "--out", str(tmp_path / "page.html")], env=clean_env(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "page.html").read_text()
    assert "SECRET FROM OUTSIDE" not in page
    sections = page.split('<section class="problem" id="p')  # p1, p2, ...: the rows in file order
    assert other_tag in sections[2] and other_tag not in sections[1]  # not shown as the first problem's

    # A row whose fields have the wrong types: one line naming the file and the line, exit 2.
    rows[3]["usage"] = "lots"
    (eval_dir / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    broken = run_maps(["view", str(eval_dir), "--out", str(tmp_path / "site")], env=clean_env(), cwd=tmp_path)
    assert broken.returncode == 2 and "Traceback" not in broken.stderr
    assert "results.jsonl line 4" in broken.stderr and "usage" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1 and not (tmp_path / "site").exists()

    # Served: the page says the same one line; the server keeps serving.
    with ViewServer(eval_dir) as server:
        status, body = fetch(server.url)
        assert status == 503 and "results.jsonl line 4" in body
        (eval_dir / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows[:3]))
        status, body = fetch(server.url)
        assert status == 200


def fetch(url: str) -> tuple[int, str]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("GET", parts.path)
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


def test_safe_component_is_one_distinct_component_for_any_text() -> None:
    texts = [*HOSTILE_IDS, "", "A" * 300, "a" * 300, "数学", "数字", "a.", "a..b", ".hidden", "-rf", "nul.txt", "\ud800", "1", "q7"]
    names = [safe_component(text) for text in texts]
    assert all(is_component(name) and len(name) <= 100 and name[0] not in ".-" and not name.endswith(".") for name in names)
    assert len({name.lower() for name in names}) == len(texts)
    assert [safe_component(text) for text in ("1", "q7", "a_b", "a.b")] == ["1", "q7", "a_b", "a.b"]  # plain ids stay readable


# ----- maps merge ----------------------------------------------------------------------------


def rewrite_rows(eval_dir: Path, change: Any) -> None:
    """results.jsonl with `change(rows)` applied (rows by pid, in file order)."""
    rows = rows_of(eval_dir)
    change(rows)
    (eval_dir / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows.values()))


def merge(tmp_path: Path, *folders: Path) -> tuple[Any, Path]:
    out = tmp_path / "merged"
    return run_maps(["merge", *map(str, folders), "--out", str(out)], env=clean_env(), cwd=tmp_path), out


def test_merge_recomputes_folder_names_and_keeps_every_problem(shards, tmp_path: Path) -> None:
    _, _, folders = shards
    first = shutil.copytree(folders[0], tmp_path / "one")
    pid = next(iter(rows_of(first)))
    (first / "problems" / safe_component(pid)).rename(first / "problems" / "renamed-by-hand")

    def rename(rows: dict[str, dict[str, Any]]) -> None:
        rows[pid]["run_dir"] = "problems/renamed-by-hand"

    rewrite_rows(first, rename)
    result, out = merge(tmp_path, first, folders[1])
    assert result.returncode == 0, result.stderr
    assert_own_folders(out, HOSTILE_IDS)  # run_dir recomputed from each id, not taken from the row
    assert json.loads((out / "manifest.json").read_text())["ids"] == HOSTILE_IDS  # the data set's order


def test_merge_refuses_what_does_not_check_out_and_writes_nothing(shards, tmp_path: Path) -> None:
    _, _, folders = shards
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE THE SHARD\n")

    def case(name: str, change: Any = None, prepare: Any = None) -> Path:
        folder = shutil.copytree(folders[0], tmp_path / name)
        if change is not None:
            rewrite_rows(folder, change)
        if prepare is not None:
            prepare(folder)
        return folder

    def set_field(key: str, value: Any) -> Any:
        return lambda rows: rows[".."].__setitem__(key, value)

    def add_stranger(rows: dict[str, dict[str, Any]]) -> None:
        rows["stranger"] = {**rows[".."], "pid": "stranger"}

    def link_out(folder: Path) -> None:
        (folder / "problems" / safe_component("..") / "images" / "leak.png").symlink_to(outside / "secret.txt")

    def folder_out(folder: Path) -> None:
        target = folder / "problems" / safe_component("..")
        shutil.rmtree(target)
        target.symlink_to(outside, target_is_directory=True)

    refused = {
        "conflict": ([folders[0], case("changed", set_field("prediction", "7"))], [str(folders[0]), "changed", "both shard 1/2"]),
        "twice": ([folders[0], folders[0]], ["passed twice"]),
        "escape": ([case("escape", set_field("run_dir", "../../../x"))], ["'..'", "escape", "../../../x"]),
        "escape_within": ([case("escape_within", set_field("run_dir", "problems/../../x"))], ["'..'", "problems/../../x"]),
        "no_run_dir": ([case("no_run_dir", lambda rows: rows[".."].pop("run_dir"))], ["'..'", "no_run_dir", "run_dir"]),
        "no_status": ([case("no_status", lambda rows: rows[".."].pop("status"))], ["'..'", "no_status", "status"]),
        "stranger": ([case("stranger", add_stranger)], ["'stranger'", "manifest"]),
        "other_folder": ([case("other_folder", set_field("run_dir", f"problems/{safe_component('.')}"))], ["'..'", "does not hold"]),
        "link": ([case("link", prepare=link_out)], ["'..'", "symlink"]),
        "linked_folder": ([case("linked_folder", prepare=folder_out)], ["'..'", "linked_folder"]),
    }
    for name, (shard_dirs, words) in refused.items():
        result, out = merge(tmp_path, *shard_dirs)
        assert result.returncode == 2, (name, result.stderr)
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, (name, result.stderr)
        assert all(word in result.stderr for word in words), (name, result.stderr)
        assert not out.exists() and not list(tmp_path.glob(".merged*")), name  # nothing half-written
    assert [path for path in tmp_path.rglob("*") if path.is_file() and not path.is_symlink()
            and "OUTSIDE THE SHARD" in path.read_text(errors="replace")] == [outside / "secret.txt"]
