"""The viewer reads the team the run recorded: with every step renamed (the reviewer included)
and new dimension names, a real `maps solve` and a small `maps eval` against the scripted
server, then `maps view`, show the reviewer's scores as a score table, the final answer, and
rollbacks naming the renamed steps; nothing on the pages falls back to the default names."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen.records._schema import SCHEMA_VERSION
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps, solver_json
from tests.helpers.eval_fixtures import write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI, RoleScript
from tests.helpers.team import write_team_config
from tests.helpers.view import Node, assert_nothing_executable, parse
from tests.helpers.view_renamed_team import DIMENSIONS, renamed_team

# default step -> (new name, new dimension)
DEFAULT_NAMES = {"interpreter", "aligner", "scholar", "solver", "critic"}




def verdict(low: str | None = None) -> str:
    """The judge's reply: every dimension 5, `low` 2 (with its question)."""
    scores = {dim: 2 if dim == low else 5 for dim in DIMENSIONS}
    return json.dumps({"scores": scores, "need_feedback": low is not None, "worst_step": low or "reckoning",
                       "feedback": {dim: f"what about the {dim}?" for dim in DIMENSIONS}})


def script() -> RoleScript:
    """One rollback to the sage (lore scored low), then a pass."""
    return RoleScript({"seer": ["SEEN"], "framer": ["FRAMED"], "sage": ["LORE v1", "LORE v2"], "answerer": [solver_json("2")],
                       "judge": [verdict("lore"), verdict()]})


def roles_of(dom: Node) -> list[str]:
    return [turn.attrs["data-role"] for turn in dom.find_all("article", cls="turn")]


def assert_judged_with_one_rollback(dom: Node) -> None:
    """A chat's part of a page: the judge's two verdicts as score tables, the answer, the rollback to the sage."""
    assert roles_of(dom) == ["user_proxy", "seer", "framer", "sage", "answerer", "judge", "sage", "answerer", "judge"]
    judges = dom.find_all("article", data_role="judge")
    for judge, low in zip(judges, ["lore", None], strict=True):
        table = judge.find_all("table", cls="scores")
        assert len(table) == 1, "the reviewer's scores show as a table, not as raw JSON"
        cells = {cell.attrs["data-dimension"]: cell for cell in table[0].find_all("td", cls="score")}
        assert list(cells) == DIMENSIONS
        assert {dim for dim, cell in cells.items() if "low" in cell.classes} == ({low} if low else set())
        assert "Judge's scores" in table[0].text()
        assert "reviewer" in judge.classes  # the reviewer's colour, by its role in the team
        # the raw reply stays one click away, collapsed
        assert [details.find_all("summary")[0].text() for details in judge.find_all("details")][0] == "raw reply"
    for answerer in dom.find_all("article", data_role="answerer"):
        assert answerer.find_all(cls="answer")[0].text() == "2"
    rollback = dom.find_all(cls="rollback")[0].text()
    assert "the Judge sent the sage step back; it re-runs, then every step after it (lore scored low)" in rollback
    assert "what about the lore?" in rollback
    assert "sage (lore; sent back by the Judge)" in dom.find_all(cls="outcome")[0].text()
    assert dom.find_all(cls="final-answer")[0].text() == "2"
    assert dom.find_all(cls="final-step")[0].text() == "from the answerer step"  # the recorded final-answer step
    assert not DEFAULT_NAMES & {node.attrs.get("data-role") for node in dom.walk()}


def test_solve_and_eval_with_every_step_renamed_show_in_the_viewer(tmp_path: Path) -> None:
    config = write_team_config(tmp_path, renamed_team())
    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    figure = make_png(tmp_path / "figure.png")
    with FakeOpenAI(script()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        solved = run_maps(["solve", str(figure), "-q", "What is 1 + 1?", "--config", str(config), "--runs-dir", str(tmp_path / "runs"),
                           "--json"], env=env, cwd=tmp_path)
        assert solved.returncode == 0, solved.stderr
        server.script = script()  # problem 1 rolls back once; problem 2 passes at once (the last replies repeat)
        evaluated = run_maps(["eval", "mathvista", "--data", str(data), "--config", str(config), "--runs-dir", str(tmp_path / "evals"),
                              "--concurrency", "1"], env=env, cwd=tmp_path)
        assert evaluated.returncode == 0, evaluated.stderr
    run_dir = Path(json.loads(solved.stdout)["run_dir"])
    eval_dir = next((tmp_path / "evals").glob("eval-*"))

    viewed = run_maps(["view", str(run_dir), "--out", str(tmp_path / "solve.html")], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr
    solve_page = parse((tmp_path / "solve.html").read_text())
    assert_nothing_executable(solve_page)
    assert_judged_with_one_rollback(solve_page)
    usage = solve_page.find_all(cls="usage")[0].text()
    assert "seer → framer → sage → answerer" in usage and "judge: threshold 5" in usage

    viewed = run_maps(["view", str(eval_dir), "--out", str(tmp_path / "eval.html")], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr
    eval_page = parse((tmp_path / "eval.html").read_text())
    assert_nothing_executable(eval_page)
    sections = {section.attrs["id"]: section for section in eval_page.find_all("section", cls="problem")}
    assert_judged_with_one_rollback(sections["p1"])
    assert roles_of(sections["p2"]) == ["user_proxy", "seer", "framer", "sage", "answerer", "judge"]
    rows = eval_page.find_all("tr", data_key="1") + eval_page.find_all("tr", data_key="2")
    assert [row.attrs["data-rollbacks"] for row in rows] == ["sage", ""]
    assert [row.attrs["data-feedback"] for row in rows] == ["sage", "none"]
    # Figure 4's bars: the judge's reviewed steps under their new names, then "no rollback".
    histogram = eval_page.find_all("table", id="feedback-histogram")[0]
    assert [bar.attrs["data-target"] for bar in histogram.find_all("tr") if "data-target" in bar.attrs] == [
        "seer", "framer", "sage", "answerer", "none"]
    assert "Judge's first decision" in histogram.text()
    assert "sage" in [option.attrs["value"] for option in eval_page.find_all("select", id="filter-rollbacks")[0].find_all("option")]


def test_a_transcript_line_that_is_no_record_is_one_line_naming_it(tmp_path: Path) -> None:
    """The viewer reads the transcript into the typed records: an event kind no maps-autogen
    writes is refused with the file and the record named (exit 2, no traceback)."""
    folder = tmp_path / "solve-odd"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION, "kind": "solve", "run_id": "solve-odd", "status": "finished"}))
    lines = [{"type": "message", "agent": "UserProxy", "role": "user_proxy", "content": "Q?"}, {"type": "event", "event": "teleported"}]
    (folder / "transcript.jsonl").write_text("".join(json.dumps({"schema_version": SCHEMA_VERSION, **line}) + "\n" for line in lines))
    viewed = run_maps(["view", str(folder), "--out", str(tmp_path / "odd.html")], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 2 and "Traceback" not in viewed.stderr
    assert "transcript.jsonl record 2" in viewed.stderr and "event" in viewed.stderr
    assert not (tmp_path / "odd.html").exists()
