"""Structured replies read as what they are (issue 28): the answer step's phases as headed
paragraphs with its final answer, the reviewer's evaluation, scores and questions, in the live
terminal view, the static page and the live page's fragments, with the raw reply one click
away; an answer naming an option by its letter shows the option's text. The team is renamed
throughout: what a reply is comes from what it parsed into, never from a step's name."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen.report.view import ViewServer
from tests.helpers.chromium import Chromium, chromium  # noqa: F401 - chromium is a fixture
from tests.helpers.common import TEST_KEY, clean_env, make_png, run_maps
from tests.helpers.fake_openai import FakeOpenAI, Reply, RoleScript
from tests.helpers.team import write_team_config
from tests.helpers.view import Node, assert_nothing_executable, parse
from tests.helpers.view_fixtures import write_synthetic_eval
from tests.helpers.view_renamed_team import DIMENSIONS, renamed_team
from tests.helpers.view_server import EventStream, get, live_feed_url

HOSTILE_KEY = "<b>Phase 2</b>\x1b[31m"  # a phase heading is the model's JSON key: escaped, bounded
PHASES = {"Phase 1": "frame the lever", HOSTILE_KEY: "evidence: 2 kg at 1 m",
          **{f"Phase {n}": f"more work {n}" for n in range(3, 16)}}  # more phases than are shown
EVALUATION = "The lore step confused mass with torque."
OPTIONS = ["2 kg", "3 kg", "4 kg"]


def answer(letter: str) -> str:
    return json.dumps({"process": PHASES, "final_answer": letter})


def verdict(low: str | None) -> str:
    scores = {dim: 2 if dim == low else 5 for dim in DIMENSIONS}
    return json.dumps({"evaluation": {"lore": EVALUATION}, "scores": scores, "need_feedback": low is not None,
                       "worst_step": low or "reckoning", "feedback": {dim: f"what about the {dim}?" for dim in DIMENSIONS}})


def script() -> RoleScript:
    """The sage's first reply is cut at max_tokens; one rollback to the sage, then a pass."""
    return RoleScript({"seer": ["SEEN"], "framer": ["FRAMED"],
                       "sage": [Reply("LORE v1 cut", finish_reason="length"), "LORE v2"],
                       "answerer": [answer("B")], "judge": [verdict("lore"), verdict(None)]})


def solve(tmp_path: Path, server: FakeOpenAI, *extra: str):
    config = write_team_config(tmp_path, renamed_team())
    figure = make_png(tmp_path / "figure.png")
    args = ["solve", str(figure), "-q", "Which mass balances the lever?", *[x for o in OPTIONS for x in ("-o", o)],
            "--config", str(config), "--runs-dir", str(tmp_path / "runs"), *extra]
    return run_maps(args, env=clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY), cwd=tmp_path)


def test_the_terminal_shows_phases_the_evaluation_and_the_options_text(tmp_path: Path) -> None:
    with FakeOpenAI(script()) as server:
        result = solve(tmp_path, server)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # the answer step's phases as headed paragraphs, not one JSON string
    assert '{"process"' not in out and "\\n" not in out
    assert "Phase 1\nframe the lever\n" in out
    assert "Phase 12" in out and "Phase 13" not in out  # bounded
    assert "\x1b" not in out and "<b>Phase 2</b>\\x1b[31m" in out  # the heading shown escaped
    # the reviewer's evaluation (in each of its two reviews, and as sent back to the sage), its
    # scores and the questions it asks
    assert out.count(EVALUATION) == 3 and f"evaluation: {EVALUATION}" in out and "what about the lore?" in out
    # the option's text beside its letter
    assert "Answerer's answer: B. 3 kg" in out and "Final answer: B. 3 kg" in out
    # the header names the step, never the dimension it is scored on
    assert "step sight" not in out and "step lore" not in out
    # one max_tokens notice, after the sage's turn it concerns
    assert out.count("cut off at max_tokens") == 1
    assert out.index("── Sage") < out.index("cut off at max_tokens")

    run_dir = next((tmp_path / "runs").iterdir())
    viewed = run_maps(["view", str(run_dir), "--out", str(tmp_path / "solve.html")], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr
    page = parse((tmp_path / "solve.html").read_text())
    assert_nothing_executable(page)
    assert_readable(page)
    assert page.find_all(cls="final-answer")[0].text() == "B. 3 kg"

    # the live page: the same records as the server's feed renders them
    from maps_autogen.records._run_files import read_run
    from maps_autogen.report.view._prepare import TranscriptState, team_of
    from maps_autogen.report.view._render import read_transcript_from, render_outcome_and_usage, render_records

    run = read_run(run_dir)
    records, _ = read_transcript_from(run_dir / "transcript.jsonl")
    live = parse(render_records(records, run, True, TranscriptState(team_of(run))) + render_outcome_and_usage(run))
    assert_readable(live)
    assert live.find_all(cls="final-answer")[0].text() == "B. 3 kg"


def assert_readable(dom: Node) -> None:
    """The answerer's phases and the judge's evaluation as headed text, the raw replies collapsed."""
    for answerer in dom.find_all("article", data_role="answerer"):
        headings = [node.text() for node in answerer.find_all("h4", cls="phase-heading")]
        assert headings[0] == "Phase 1" and headings[1] == "<b>Phase 2</b>\x1b[31m"  # text, not markup
        assert len(headings) == 12  # bounded
        assert not answerer.find_all("b")
        assert "frame the lever" in answerer.find_all("section", cls="phase")[0].text()
        assert answerer.find_all(cls="answer")[0].text() == "B. 3 kg"
        raw = answerer.find_all("details", cls="raw-reply")
        assert len(raw) == 1 and '"process"' in raw[0].text()
    judges = dom.find_all("article", data_role="judge")
    assert len(judges) == 2
    for judge in judges:
        assert [node.text() for node in judge.find_all("h4", cls="phase-heading")] == ["lore"]
        assert EVALUATION in judge.find_all("section", cls="phase")[0].text()
        caption = judge.find_all("table", cls="scores")[0].find_all("caption")[0].text()
        assert caption == "Judge's scores"  # what came of it is the event after it, as recorded
        assert len(judge.find_all("details", cls="raw-reply")) == 1
    # What the Manager did with each review: the step it sent back (the one scored on lore), then passed.
    (rollback,) = dom.find_all(cls="rollback")
    assert rollback.attrs["data-by"] == "critic" and rollback.attrs["data-step"] == "sage"
    assert rollback.find_all(cls="sender")[0].text() == "the Judge"
    assert dom.find_all(cls="stop")[0].find_all(cls="why")[0].text() == "the Judge passed every step"
    # the view's turn header names the step, not its dimension
    seer = dom.find_all("article", data_role="seer")[0]
    assert "step sight" not in seer.text()


def test_json_and_quiet_give_the_options_text(tmp_path: Path) -> None:
    with FakeOpenAI(script()) as server:
        as_json = solve(tmp_path, server, "--json")
        server.script = script()
        quiet = solve(tmp_path, server, "--quiet")
    assert as_json.returncode == 0, as_json.stderr
    summary = json.loads(as_json.stdout)
    assert summary["final_answer"] == "B" and summary["final_answer_text"] == "B. 3 kg"
    assert quiet.returncode == 0 and quiet.stdout == "B. 3 kg\n"


def test_live_pages_say_finished_and_leave_unfinished_problems_out_of_the_histogram(tmp_path: Path, chromium: Chromium) -> None:
    eval_dir = tmp_path / "eval-z"
    facts = write_synthetic_eval(eval_dir, 6)
    results = eval_dir / "results.jsonl"
    rows = results.read_text().splitlines(keepends=True)
    results.write_text("".join(rows[:3]))  # problems 4-6 are still running: folders, no result rows
    scored = [fact for fact in facts[:3] if not fact["failed"]]
    with ViewServer(eval_dir) as server:
        tab = chromium.open(server.url)
        counted = tab.js("Array.from(document.querySelectorAll('#feedback-histogram .count')).reduce((n, c) => n + Number(c.textContent), 0)")
        unfinished = tab.js("document.querySelectorAll('#index-table tr[data-verdict=unfinished]').length")
        assert unfinished == 3 and counted == len(scored)  # an unfinished problem has no feedback yet, not "none"
    run_dir = eval_dir / "problems" / facts[0]["pid"]  # a finished run: its feed ends with "finished"
    with ViewServer(run_dir) as server:
        tab = chromium.open(server.url)
        status = tab.js("new Promise(done => { const wait = () => { const t = document.getElementById('live-status').textContent;"
                        " t.endsWith('finished') || t.includes('disconnected') ? done(t) : setTimeout(wait, 50); }; wait(); })")
        assert status == "live updates: finished"


def test_the_usage_table_fills_while_the_run_goes_on(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval-u"
    write_synthetic_eval(eval_dir, 1)
    run_dir = eval_dir / "problems" / "q1"
    transcript = run_dir / "transcript.jsonl"
    records = transcript.read_text().splitlines(keepends=True)
    transcript.write_text("".join(records[:3]))  # the task, the Interpreter's and the Aligner's turns
    run = json.loads((run_dir / "run.json").read_text())
    del run["usage_by_role"]  # run.json counts the usage per step only when the run ends
    (run_dir / "run.json").write_text(json.dumps({**run, "status": "running"}))
    with ViewServer(run_dir) as server:
        page = get(server.url).body
        assert usage_calls(page) == {"interpreter": "1", "aligner": "1"}
        feed = EventStream(live_feed_url(server.url, page))
        with open(transcript, "a") as handle:
            handle.writelines(records[3:4])  # the Scholar's turn
        assert usage_calls(feed.until("replace", 'class="card usage"').split("</section>", 1)[-1]).get("scholar") == "1"
        feed.close()


def usage_calls(markup: str) -> dict[str, str]:
    """step -> calls in the usage table of `markup`."""
    table = parse(markup).find_all("table", cls="usage-table")
    rows = table[0].find_all("tr")[1:] if table else []
    return {cells[0].text(): cells[2].text() for cells in (row.find_all("td") for row in rows) if cells[2].text() != "–"}


def test_headings_are_bounded_and_only_parsed_replies_are_read() -> None:
    from maps_autogen.records._chat_records import AnswerParsed, VerdictParsed
    from maps_autogen.report._replies import MAX_HEADING_CHARS, read_reply

    reply = json.dumps({"process": {"H" * 5000: "work", "Phase 2": ["a", "b"]}, "final_answer": "C"})
    reading = read_reply(reply, AnswerParsed(final_answer="C", parsed=True))
    assert reading is not None and reading.kind == "answer" and reading.final_answer == "C"
    assert [len(section.heading) for section in reading.sections] == [MAX_HEADING_CHARS, len("Phase 2")]
    assert reading.sections[1].text == "a, b"
    # what it is comes from what it parsed into: an unparsed answer or a plain step's text stays text
    assert read_reply(reply, AnswerParsed(final_answer="C", parsed=False)) is None
    assert read_reply(reply, None) is None
    review = read_reply(json.dumps({"evaluation": {"x": "why"}, "scores": {"x": 5}}),
                        VerdictParsed(scores={"x": 5}, evaluation={"x": "why"}))
    assert review is not None and review.kind == "review" and [(s.heading, s.text) for s in review.sections] == [("x", "why")]
