"""`maps view --serve` renders each page once per change of the files it is made from.

The server counts its renders by page (`ViewServer.pages.renders`); the tests count those, not
time. Files are given mtimes well in the past (`age`), as a finished run's are: a file modified
just before a request may still change unseen within the file system's timestamp granularity, so
such a page is rendered again (one test checks that rule with an mtime in the future).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from maps_autogen.records._schema import SCHEMA_VERSION
from maps_autogen.report.view import ViewServer
from maps_autogen.report.view._render import page_key
from tests.helpers.common import TEST_KEY
from tests.helpers.view_fixtures import write_synthetic_eval
from tests.helpers.view_server import get, index_rows


def age(path: Path, seconds: float) -> None:
    """Give `path` (and, for a folder, everything in it) an mtime `seconds` ago (negative: ahead)."""
    moment = time.time() - seconds
    for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(item, (moment, moment))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ViewServer, Path]]:
    eval_dir = tmp_path / "eval-cache"
    write_synthetic_eval(eval_dir, 3)
    age(eval_dir, 3600)
    with ViewServer(eval_dir) as server:
        yield server, eval_dir


def append_row(eval_dir: Path, **fields: object) -> None:
    results = eval_dir / "results.jsonl"
    first = json.loads(results.read_text().splitlines()[0])
    with open(results, "a") as handle:
        handle.write(json.dumps({**first, **fields}) + "\n")


def test_index_is_rendered_once_per_change(served: tuple[ViewServer, Path]) -> None:
    server, eval_dir = served
    first, second = get(server.url), get(server.url)
    assert first.status == second.status == 200 and first.body == second.body
    assert set(index_rows(first.body)) == {"q1", "q2", "q3"}
    assert server.pages.renders["index"] == 1

    # A finished problem (results.jsonl grows) shows at the next request, rendered once.
    append_row(eval_dir, pid="late", run_dir="problems/late")
    age(eval_dir / "results.jsonl", 1800)
    assert "late" in index_rows(get(server.url).body)
    assert "late" in index_rows(get(server.url).body)
    assert server.pages.renders["index"] == 2

    # A problem that started (a folder with a run.json, no result yet) shows as unfinished; its
    # run.json rewritten in place (the folder listing unchanged) shows too.
    folder = eval_dir / "problems" / "q9"
    folder.mkdir()
    run = {"schema_version": SCHEMA_VERSION, "kind": "solve", "status": "running", "pid": "q9", "subset": "physics", "problem": {"question": "?"}}
    (folder / "run.json").write_text(json.dumps(run))
    age(eval_dir / "problems", 900)
    page = get(server.url).body
    assert index_rows(page)["q9"] == "unfinished" and 'data-subset="physics"' in page.split(">q9</a>")[0].rsplit("<tr", 1)[1]
    with open(folder / "run.json", "r+") as handle:  # same inode, same folder entries
        handle.write(json.dumps({**run, "subset": "chemist"}))
    age(folder / "run.json", 600)
    page = get(server.url).body
    assert 'data-subset="chemist"' in page.split(">q9</a>")[0].rsplit("<tr", 1)[1]
    get(server.url)
    assert server.pages.renders["index"] == 4


def test_problem_pages_are_rendered_once_per_change(served: tuple[ViewServer, Path]) -> None:
    server, eval_dir = served
    url = f"{server.url}problems/{page_key('q2')}.html"
    first, second = get(url), get(url)
    assert first.status == 200 and first.body == second.body
    assert server.pages.renders[f"problem {page_key('q2')}"] == 1 and server.pages.renders["rows"] == 1
    # A turn appended to the problem's transcript shows at the next request.
    transcript = eval_dir / "problems" / "q2" / "transcript.jsonl"
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    aligner = next(record for record in records if record.get("role") == "aligner")
    with open(transcript, "a") as handle:
        handle.write(json.dumps({**aligner, "index": len(records) + 1, "content": "A TURN WRITTEN LATER"}) + "\n")
    age(transcript, 1800)
    assert "A TURN WRITTEN LATER" in get(url).body and "A TURN WRITTEN LATER" in get(url).body
    assert server.pages.renders[f"problem {page_key('q2')}"] == 2
    assert server.pages.renders["rows"] == 1  # the results did not change
    # The problem's result rewritten (a resumed eval appends its new row): its page shows it.
    results = eval_dir / "results.jsonl"
    row = next(json.loads(line) for line in results.read_text().splitlines() if json.loads(line)["pid"] == "q2")
    append_row(eval_dir, **{**row, "extraction": "EXTRACTED LATER"})
    age(results, 900)
    assert "EXTRACTED LATER" in get(url).body and "EXTRACTED LATER" in get(url).body
    assert server.pages.renders[f"problem {page_key('q2')}"] == 3 and server.pages.renders["rows"] == 2


def test_damaged_results_are_reported_on_every_request_until_repaired(served: tuple[ViewServer, Path]) -> None:
    server, eval_dir = served
    assert get(server.url).status == 200
    results = eval_dir / "results.jsonl"
    good = results.read_text()
    append_row(eval_dir, pid="bad", usage=f"lots {TEST_KEY}")
    age(results, 1800)
    for _ in range(2):  # an error is never kept as the page
        broken = get(server.url)
        assert broken.status == 503 and "results.jsonl line 4" in broken.body and TEST_KEY not in broken.body
    results.write_text(good)
    age(results, 900)
    repaired = get(server.url)
    assert repaired.status == 200 and set(index_rows(repaired.body)) == {"q1", "q2", "q3"}


def test_files_modified_at_the_render_are_not_trusted(served: tuple[ViewServer, Path]) -> None:
    server, eval_dir = served
    age(eval_dir / "results.jsonl", -3600)  # an mtime the render cannot be sure is past
    get(server.url)
    get(server.url)
    assert server.pages.renders["index"] == 2
