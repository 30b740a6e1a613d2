"""The viewer reads only the run folder: an entry of problems/ that leads out of it (a symlink
to a folder elsewhere, as a tampered or carelessly copied run may hold) is not read as a
problem that started, on the served index or anywhere else."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen.records._schema import SCHEMA_VERSION
from maps_autogen.report.view import ViewServer
from maps_autogen.report.view._eval_pages import load_results, unfinished_rows
from tests.helpers.view_fixtures import write_synthetic_eval
from tests.helpers.view_server import get, index_rows


def _started(folder: Path, pid: str) -> None:
    folder.mkdir(parents=True)
    run = {"schema_version": SCHEMA_VERSION, "kind": "solve", "status": "running", "pid": pid, "subset": "physics",
           "problem": {"question": "?"}}
    (folder / "run.json").write_text(json.dumps(run))


def test_a_problem_folder_leading_outside_the_run_is_not_read(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval"
    write_synthetic_eval(eval_dir, 2)
    _started(eval_dir / "problems" / "inside", "inside")  # a problem that started: shown
    _started(tmp_path / "elsewhere", "read-from-outside")
    (eval_dir / "problems" / "outside").symlink_to(tmp_path / "elsewhere", target_is_directory=True)

    finished, _ = load_results(eval_dir)
    assert [row.pid for row in unfinished_rows(eval_dir, finished)] == ["inside"]
    with ViewServer(eval_dir) as server:
        shown = index_rows(get(server.url).body)
    assert shown.get("inside") == "unfinished" and "read-from-outside" not in shown
