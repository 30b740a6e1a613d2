"""`maps view`: the HTML page of a solve run and of an eval run.

The run folders are real: the chats run in-process against the scripted OpenAI-compatible
server, with model replies that try to inject script. The unit tests read the page with
`html.parser`; the `browser` tests load it in a headless Chromium (driven over the DevTools
protocol on a pipe) and check, after the page's own script ran, that the turns and scores are
there, that the filters work and that nothing hostile executed.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from maps_autogen._util._errors import DataError
from maps_autogen.records._schema import SCHEMA_VERSION
from maps_autogen.report.view import CSS, SCRIPT, render_view, write_view
from tests.helpers.chromium import Chromium, Tab, chromium  # noqa: F401 - chromium is a fixture
from tests.helpers.common import TEST_KEY, critic_json, make_png, solver_json, write_config
from tests.helpers.fake_openai import FakeOpenAI, RoleScript
from tests.helpers.synthetic_runs import eval_manifest_json, model_record
from tests.helpers.view import assert_nothing_executable, parse

# Each tries a different way to run script; `window.__pwned` or the title would show it worked.
HOSTILE_SCRIPT = "<script>window.__pwned = 'script'; document.title = 'pwned'</script>"
HOSTILE_IMG = "<img src=x onerror=\"window.__pwned = 'img'; document.title = 'pwned'\">"
HOSTILE_BREAKOUT = "</div></pre></main><svg onload=\"window.__pwned = 'svg'\"></svg><a href=\"javascript:window.__pwned = 'link'\">x</a><!--"
HOSTILE_FEEDBACK = "<b onmouseover=\"window.__pwned = 'feedback'\">Which quantity must balance?</b>"
HOSTILE_QUESTION = "Which mass balances the lever? <script>window.__pwned = 'question'</script>"
HOSTILE_GOLD = "B<script>window.__pwned = 'gold'</script>"
HOSTILE_PID = "9\"><script>window.__pwned = 'pid'</script>"
HOSTILE_ERROR = "<iframe src=\"javascript:parent.__pwned = 'error'\"></iframe> model service down"

ROLLBACK_ROLES = ["user_proxy", "interpreter", "aligner", "scholar", "solver", "critic", "scholar", "solver", "critic"]


# ----- building real run folders -------------------------------------------------------------


def hostile_rollback_script() -> RoleScript:
    """A chat with one rollback (to the Scholar) whose replies carry injection attempts."""
    return RoleScript({
        "interpreter": [f"CAPTION: a lever. {HOSTILE_SCRIPT}"],
        "aligner": [f"ALIGNED: {HOSTILE_IMG}"],
        "scholar": [f"KNOWLEDGE v1: forces add up. {HOSTILE_BREAKOUT}", "KNOWLEDGE v2: torques balance, m1 d1 = m2 d2."],
        "solver": [solver_json("A"), solver_json("B")],
        "critic": [critic_json(5, 4, 2, 3, worst="knowledge", feedback={"knowledge": HOSTILE_FEEDBACK}), critic_json(5, 5, 5, 5)],
    })


def plain_script() -> RoleScript:
    """A chat without image that passes at once."""
    return RoleScript({"aligner": ["ALIGNED"], "scholar": ["KNOW"], "solver": [solver_json("12")], "critic": [critic_json(None, 5, 5, 5)]})


@dataclass
class Runs:
    solve_dir: Path
    eval_dir: Path
    records: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """A hostile solve run, and an eval folder with two solved problems and one failed one."""
    from maps_autogen.orchestration._solving import assemble_team, solve_problem
    from maps_autogen.problem._problem import build_problem
    from maps_autogen.settings._config import load_config

    base = tmp_path_factory.mktemp("view")
    png = make_png(base / "lever.png")
    loaded = load_config(write_config(base / "agents.yaml", **{"critic.final_review": True}))
    lever = build_problem(HOSTILE_QUESTION, options=["2 kg", "4 kg"], image_sources=[str(png)], max_side=loaded.config.images.max_side)
    plain = build_problem("What is 3 times 4?", max_side=loaded.config.images.max_side)
    eval_dir = base / "eval-20260101-000000-abcdef"
    with FakeOpenAI(hostile_rollback_script()) as server:
        team = assemble_team(loaded, env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": TEST_KEY})
        solve = solve_problem(lever, team, runs_dir=base / "runs", run_id="solve-hostile")
        server.script = hostile_rollback_script()
        solve_problem(lever, team, runs_dir=eval_dir / "problems", run_id="lever-1")
        server.script = plain_script()
        solve_problem(plain, team, runs_dir=eval_dir / "problems", run_id="times-2")
    # A solve run knows its gold answer only in an eval, but the page shows it whenever present.
    run_file = solve.run_dir / "run.json"
    run_file.write_text(json.dumps({**json.loads(run_file.read_text()), "gold": HOSTILE_GOLD, "correct": True}))
    write_eval_files(eval_dir)
    records = [json.loads(line) for line in (solve.run_dir / "transcript.jsonl").read_text().splitlines()]
    return Runs(solve_dir=solve.run_dir, eval_dir=eval_dir, records=records)


def result_row(pid: str, subset: str, correct: bool | None, **extra: Any) -> dict[str, Any]:
    row = {
        "schema_version": SCHEMA_VERSION, "pid": pid, "subset": subset, "status": "ok", "gold": "B", "response": "B", "extraction": "B",
        "prediction": "B", "correct": correct, "stop_reason": "critic_passed", "rollbacks": [], "critic_scores": [],
        "usage": {"calls": 4, "prompt_tokens": 100, "completion_tokens": 10, "cost": 0.001}, "seconds": 1.5, "error": None,
        "metadata": {"question_type": "multi_choice", "category": "physics"}, "run_dir": f"problems/{pid}", "scoring": {},
    }
    return {**row, **extra}


def write_eval_files(eval_dir: Path) -> None:
    """manifest.json and results.jsonl as `maps eval` writes them (per the eval format)."""
    manifest = eval_manifest_json("mathvista", ["lever-1", "times-2", HOSTILE_PID, "escape-4"], eval_id=eval_dir.name,
                                  subsets=["testmini", "extra"], created_at="2026-01-01T00:00:00Z",
                                  models={"all": model_record("openai:gpt-4o", endpoint=None, kind=None)})
    (eval_dir / "manifest.json").write_text(json.dumps(manifest))
    rows = [
        result_row("lever-1", "testmini", True, rollbacks=["scholar"], critic_scores=[{"knowledge": 2}, {"knowledge": 5}]),
        result_row("times-2", "extra", False, gold="13", prediction="12", response="12", extraction="12"),
        result_row(HOSTILE_PID, "testmini", None, status="failed", error=HOSTILE_ERROR, stop_reason="error", run_dir="problems/9_script"),
        # A damaged row pointing outside the eval folder must not pull that folder in.
        result_row("escape-4", "extra", False, stop_reason="rollback_limit", rollbacks=["solver", "solver"], run_dir="../../etc"),
    ]
    lines = [json.dumps(row) for row in rows]
    (eval_dir / "results.jsonl").write_text("\n".join(lines) + "\n{\"torn\": ")


# ----- a small DOM from html.parser ----------------------------------------------------------










def csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"




# ----- the solve page ------------------------------------------------------------------------


def test_every_turn_is_shown_in_order_with_usage(runs: Runs) -> None:
    dom = parse(render_view(runs.solve_dir))
    turns = dom.find_all("article", cls="turn")
    assert [turn.attrs["data-role"] for turn in turns] == ROLLBACK_ROLES
    messages = [record for record in runs.records if record["type"] == "message"]
    for turn, record in zip(turns, messages, strict=True):
        assert f"role-{record['role']}" in turn.classes  # the role's colour
        if record["role"] != "critic":  # the Critic's reply is shown as its scores table
            assert turn.find_all(cls="content")[0].text() == record["content"]
        if record.get("usage"):
            meta = turn.find_all(cls="meta")[0].text()
            assert f"{record['usage']['prompt_tokens']:,} → {record['usage']['completion_tokens']:,} tokens" in meta
            assert f"${record['usage']['cost']:.4f}" in meta
    # Only the Scholar's second turn is a revision.
    assert [bool(turn.find_all(cls="revision")) for turn in turns] == [False] * 6 + [True, False, False]
    outcome = dom.find_all("section", cls="outcome")[0].text()
    assert "8 calls" in outcome and "critic_passed" in outcome
    assert dom.find_all(cls="final-answer")[0].text() == "B. 4 kg"  # the option letter with its text
    usage_rows = dom.find_all("table", cls="usage-table")[0].find_all("tr")
    assert [row.find_all("td")[0].text() for row in usage_rows[1:]] == ["interpreter", "aligner", "scholar", "solver", "critic"]
    assert dom.find_all("img")[0].attrs["alt"] == "images/image-1.png"


def test_hostile_content_is_shown_as_text_and_cannot_run(runs: Runs) -> None:
    page = render_view(runs.solve_dir)
    dom = parse(page)
    assert_nothing_executable(dom)
    text = dom.text()
    for hostile in (HOSTILE_SCRIPT, HOSTILE_IMG, HOSTILE_BREAKOUT, HOSTILE_FEEDBACK, HOSTILE_QUESTION, HOSTILE_GOLD):
        assert hostile in text  # shown literally, character for character
    assert dom.find_all("title")[0].text() == "maps view: solve-hostile"
    assert TEST_KEY not in page


def test_critic_scores_table_per_round(runs: Runs) -> None:
    dom = parse(render_view(runs.solve_dir))
    tables = dom.find_all("table", cls="scores")
    assert len(tables) == 2
    first, second = ({cell.attrs["data-dimension"]: cell for cell in table.find_all("td", cls="score")} for table in tables)
    assert {dim: cell.text() for dim, cell in first.items()} == {"caption": "5", "alignment": "4", "knowledge": "2", "solution": "3"}
    # Below the threshold (5) is marked.
    assert {dim for dim, cell in first.items() if "low" in cell.classes} == {"alignment", "knowledge", "solution"}
    assert all("pass" in cell.classes and cell.text() == "5" for cell in second.values())
    assert HOSTILE_FEEDBACK in tables[0].text()
    # what came of each review is the rollback and the stop recorded after it
    (rollback,) = dom.find_all(cls="rollback")
    assert (rollback.attrs["data-by"], rollback.attrs["data-step"]) == ("critic", "scholar")
    assert rollback.find_all(cls="sender")[0].text() == "the Critic"
    assert dom.find_all(cls="stop")[0].find_all(cls="why")[0].text() == "the Critic passed every step"


def test_rollback_is_marked_between_the_review_and_the_revision(runs: Runs) -> None:
    dom = parse(render_view(runs.solve_dir))
    transcript = dom.find_all("section", cls="transcript")[0]
    sequence = [node.attrs.get("data-role") or node.attrs.get("data-event") for node in transcript.walk()
                if "turn" in node.classes or "event" in node.classes]
    assert sequence == [*ROLLBACK_ROLES[:6], "rollback", *ROLLBACK_ROLES[6:], "stop"]
    rollback = transcript.find_all(cls="rollback")[0].text()
    assert "Rollback 1" in rollback and "scholar step" in rollback and "knowledge 2" in rollback


def test_gold_answer_and_verdict_when_known(runs: Runs) -> None:
    dom = parse(render_view(runs.solve_dir))
    assert dom.find_all(cls="gold-answer")[0].text() == HOSTILE_GOLD
    assert dom.find_all(cls="verdict")[0].text() == "correct"


def test_content_security_policy_allows_only_the_pages_own_code(runs: Runs) -> None:
    dom = parse(render_view(runs.solve_dir))
    head = dom.find_all("head")[0]
    first_meta = head.find_all("meta")[1]  # right after the charset, before any style or script
    assert first_meta.attrs["http-equiv"] == "Content-Security-Policy"
    policy = dict(part.strip().split(" ", 1) for part in first_meta.attrs["content"].split(";"))
    assert policy["default-src"] == "'none'" and policy["img-src"] == "data:"
    assert policy["base-uri"] == "'none'" and policy["form-action"] == "'none'"
    # Hashes, not 'unsafe-inline': inline event handlers and injected scripts stay blocked.
    assert policy["script-src"] == csp_hash(dom.find_all("script")[0].text()) == csp_hash(SCRIPT)
    assert policy["style-src"] == csp_hash(dom.find_all("style")[0].text()) == csp_hash(CSS)
    assert "unsafe" not in first_meta.attrs["content"]
    assert not [node for node in dom.walk() if "style" in node.attrs]  # inline styles would be blocked


def test_style_and_script_are_the_package_files() -> None:
    """The CSS and JS live as files under the package; each page's policy hashes exactly them."""
    from importlib.resources import files

    from maps_autogen.report.view import PageMode, content_security_policy

    static = files("maps_autogen.report.view").joinpath("static")
    assert CSS == static.joinpath("view.css").read_text() and SCRIPT == static.joinpath("view.js").read_text()
    for mode in PageMode:
        policy = content_security_policy(mode)
        assert f"script-src {csp_hash(SCRIPT)};" in policy and f"style-src {csp_hash(CSS)};" in policy
    sources = "\n".join(path.read_text() for path in Path(str(files("maps_autogen.report.view"))).glob("*.py"))
    assert "addEventListener" not in sources and "border-left" not in sources  # no script or style in Python strings


def test_served_page_and_live_fragments_are_escaped_too(runs: Runs, tmp_path: Path) -> None:
    """The hostile run through the server: the page, and the turns its live feed sends as they
    are written, show the injection attempts as text and hold nothing executable."""
    import shutil

    from maps_autogen.report.view import ViewServer
    from tests.helpers.view_server import EventStream, get, live_feed_url

    run_dir = Path(shutil.copytree(runs.solve_dir, tmp_path / "hostile"))
    lines = (run_dir / "transcript.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "transcript.jsonl").write_text(lines[0])
    with ViewServer(run_dir) as server:
        served = get(server.url).body
        feed = EventStream(live_feed_url(server.url, served))
        with open(run_dir / "transcript.jsonl", "a") as handle:
            handle.writelines(lines[1:])
        feed.until("append", 'data-event="stop"')
        feed.close()
    fragments = "".join(data.get("html", "") for event, data in feed.received if event == "append")
    dom = parse(served.replace("</main>", fragments + "</main>"))
    assert_nothing_executable(dom, image_prefix="files/images/")
    assert [turn.attrs["data-role"] for turn in dom.find_all("article", cls="turn")] == ROLLBACK_ROLES
    for hostile in (HOSTILE_SCRIPT, HOSTILE_IMG, HOSTILE_BREAKOUT, HOSTILE_FEEDBACK, HOSTILE_QUESTION, HOSTILE_GOLD):
        assert hostile in dom.text()
    assert TEST_KEY not in served + fragments


def write_run(folder: Path, run: dict[str, Any], records: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION, "kind": "solve", **run}))
    (folder / "transcript.jsonl").write_text("".join(json.dumps({"schema_version": SCHEMA_VERSION, **record}) + "\n"
                                                     for record in records) + '{"type": "mess')
    return folder


def test_events_unfinished_run_and_unknown_roles(tmp_path: Path) -> None:
    """Every event kind shows; an unfinished, hand-written run with a torn last line still renders."""
    records = [
        {"type": "event", "event": "interpreter_skipped", "detail": "no image, so the Interpreter is skipped"},
        {"type": "message", "agent": "UserProxy", "role": "user_proxy", "step": "task", "round": 0, "content": "Q?"},
        {"type": "message", "agent": "Solver", "role": "solver", "step": "solution", "round": 0, "content": "It is 4. <b>",
         "parsed": {"final_answer": "It is 4. <b>", "parsed": False}},
        {"type": "event", "event": "solver_unparsed", "detail": "not valid JSON"},
        {"type": "message", "agent": "Critic", "role": "critic", "step": "review", "round": 0, "content": "Fine, well done.", "parsed": None},
        {"type": "event", "event": "critic_unparseable", "detail": "no usable scores"},
        {"type": "message", "agent": "Direct", "role": "x\" onclick=\"bad", "step": "answer", "round": 0, "content": "other role"},
        {"type": "event", "event": "error", "detail": HOSTILE_ERROR},
        {"type": "event", "event": "max_tokens_reached", "role": "solver", "detail": "the reply was cut at max_tokens"},
        {"type": "event", "event": "stop", "stop_reason": "error", "final_answer": "It is 4. <b>"},
    ]
    run = {"run_id": "solve-hand", "status": "running", "problem": {"question": "Q?", "image_files": ["../../../etc/passwd", "images/missing.png"]},
           "gold": "4", "correct": False, "usage": {"calls": 2, "prompt_tokens": 10, "completion_tokens": 5, "cost": None}}
    dom = parse(render_view(write_run(tmp_path / "solve-hand", run, records)))
    assert_nothing_executable(dom)
    events = {node.attrs["data-event"]: node.text() for node in dom.find_all(cls="event")}
    assert list(events) == ["interpreter_skipped", "solver_unparsed", "critic_unparseable", "error", "max_tokens_reached", "stop"]
    assert HOSTILE_ERROR in events["error"] and "cut at max_tokens" in events["max_tokens_reached"]
    assert "Stopped: error" in events["stop"]
    assert "not parsed" in dom.find_all("article", data_role="solver")[0].text()
    assert dom.find_all("article", data_role="critic")[0].find_all(cls="content")[0].text() == "Fine, well done."
    assert "role-other" in dom.find_all("article", data_role="x\" onclick=\"bad")[0].classes
    assert "the run has not finished" in dom.find_all(cls="outcome")[0].text()
    assert dom.find_all(cls="verdict")[0].text() == "incorrect"
    assert "unknown" in dom.find_all(cls="outcome")[0].text()  # the cost
    # An image path that leaves the run folder is never read.
    assert dom.find_all("img") == [] and dom.text().count("(image not available)") == 2


# ----- the eval page -------------------------------------------------------------------------


def test_eval_index_with_filters_accuracy_and_problem_sections(runs: Runs) -> None:
    page = render_view(runs.eval_dir)
    dom = parse(page)
    assert_nothing_executable(dom)
    assert dom.find_all(id="accuracy")[0].text() == "33.33% (1/3)"
    rows = dom.find_all("table", id="index-table")[0].find_all("tbody")[0].find_all("tr")
    assert [row.attrs["data-verdict"] for row in rows] == ["correct", "incorrect", "failed", "incorrect"]
    assert [row.attrs["data-subset"] for row in rows] == ["testmini", "extra", "testmini", "extra"]
    assert [row.attrs["data-rollbacks"] for row in rows] == ["scholar", "", "", "solver"]
    assert [row.find_all("a")[0].attrs["href"] for row in rows] == ["#p1", "#p2", "#p3", "#p4"]
    assert rows[2].find_all("a")[0].text() == HOSTILE_PID
    options = {select.attrs["data-filter"]: [option.attrs["value"] for option in select.find_all("option")] for select in dom.find_all("select")}
    assert options == {
        "verdict": ["", "correct", "incorrect", "failed"],
        "subset": ["", "extra", "testmini"],
        "stop": ["", "critic_passed", "error", "rollback_limit"],
        "rollbacks": ["", "*", "-", "scholar", "solver"],
    }
    sections = {section.attrs["id"]: section for section in dom.find_all("section", cls="problem")}
    assert list(sections) == ["p1", "p2", "p3", "p4"]
    assert [turn.attrs["data-role"] for turn in sections["p1"].find_all("article", cls="turn")] == ROLLBACK_ROLES
    assert [turn.attrs["data-role"] for turn in sections["p2"].find_all("article", cls="turn")] == ["user_proxy", "aligner", "scholar", "solver", "critic"]
    assert len(sections["p1"].find_all("table", cls="scores")) == 2 and sections["p1"].find_all(cls="rollback")
    assert "No transcript was saved" in sections["p3"].text() and HOSTILE_ERROR in sections["p3"].text()
    assert "No transcript was saved" in sections["p4"].text()  # its run_dir leaves the eval folder
    assert "request sent" not in page  # prompts are left out of eval pages to keep them small
    subsets = dom.find_all("table", cls="subsets")[0].text()
    assert "testmini100.00% (1/1)" in subsets and "extra0.00% (0/2)" in subsets


# ----- files and errors ----------------------------------------------------------------------


def test_write_view_default_and_explicit_paths(runs: Runs, tmp_path: Path) -> None:
    default = write_view(runs.solve_dir)
    assert default == runs.solve_dir / "view.html" and default.read_text() == render_view(runs.solve_dir)
    out = write_view(runs.eval_dir, tmp_path / "pages" / "eval.html")
    assert out.is_file() and "MAPS eval" in out.read_text()
    assert not list((tmp_path / "pages").glob(".*tmp"))


def test_errors_name_the_problem_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"does not exist.*maps solve or maps eval"):
        render_view(tmp_path / "nope")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(DataError, match="is a file, not a run folder"):
        render_view(tmp_path / "file.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="not a run folder"):
        render_view(tmp_path / "empty")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.json").write_text("{")
    with pytest.raises(DataError, match=r"cannot read .*manifest\.json"):
        render_view(tmp_path / "broken")
    (tmp_path / "no-transcript").mkdir()
    (tmp_path / "no-transcript" / "run.json").write_text(json.dumps({"schema_version": SCHEMA_VERSION}))
    with pytest.raises(DataError, match=r"no transcript\.jsonl"):
        render_view(tmp_path / "no-transcript")


def test_cli_view_command(runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from maps_autogen import cli

    if "view" not in cli.cli.commands:
        pytest.skip("pending: `maps view` is not wired into maps_autogen/cli.py yet")
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *args, **kwargs: opened.append(url) or True)
    out = tmp_path / "v.html"
    with pytest.raises(SystemExit) as done:
        cli.main(["view", str(runs.solve_dir), "--out", str(out), "--open"])
    assert done.value.code == 0 and out.is_file()
    assert capsys.readouterr().out.strip() == str(out)
    assert opened and opened[0].startswith("file://") and opened[0].endswith("v.html")
    with pytest.raises(SystemExit) as done:
        cli.main(["view", str(tmp_path / "missing")])
    assert done.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("error: run folder") and len(error.strip().splitlines()) == 1


# ----- in a real browser ---------------------------------------------------------------------

def assert_clean(tab: Tab) -> None:
    """Nothing hostile ran, the page's own code ran, nothing loaded from outside."""
    state = tab.js("({title: document.title, pwned: window.__pwned === undefined ? null : String(window.__pwned),"
                   " violations: window.__violations, ready: document.documentElement.getAttribute('data-ready'),"
                   " scripts: document.scripts.length, frames: document.querySelectorAll('iframe, svg, object, embed').length})")
    assert state["pwned"] is None and "pwned" not in state["title"]
    assert state["violations"] == []  # so the CSP hashes of our own style and script are right
    assert state["ready"] == "1" and state["scripts"] == 1 and state["frames"] == 0
    assert not tab.page_events("Runtime.exceptionThrown") and not tab.page_events("Page.javascriptDialogOpening")
    urls = [event["params"]["request"]["url"] for event in tab.page_events("Network.requestWillBeSent")]
    assert urls and all(url.startswith(("file://", "data:")) for url in urls), urls


@pytest.mark.browser
def test_browser_solve_page(runs: Runs, chromium: Chromium, tmp_path: Path) -> None:
    tab = chromium.open(write_view(runs.solve_dir, tmp_path / "solve.html"))
    assert_clean(tab)
    seen = tab.js("""({
      roles: Array.from(document.querySelectorAll('article.turn')).map(a => a.dataset.role),
      colours: Array.from(document.querySelectorAll('article.turn')).map(a => getComputedStyle(a).borderLeftColor),
      scores: Array.from(document.querySelectorAll('table.scores')).map(t =>
        Object.fromEntries(Array.from(t.querySelectorAll('td.score')).map(td => [td.dataset.dimension, td.textContent]))),
      lowColour: getComputedStyle(document.querySelector('td.score.low')).color,
      rollbacks: Array.from(document.querySelectorAll('.event.rollback')).map(e => e.textContent),
      contents: Array.from(document.querySelectorAll('article.turn .content')).map(c => c.textContent),
      body: document.body.innerText,
      imageWidth: document.querySelector('.images img').naturalWidth,
    })""")
    assert seen["roles"] == ROLLBACK_ROLES
    # The CSS applied: each role has its own colour (the Scholar and its revision share one).
    colours = dict(zip(seen["roles"], seen["colours"], strict=True))
    assert len(set(colours.values())) == 6 and seen["lowColour"] == "rgb(185, 28, 28)"
    assert seen["scores"] == [{"caption": "5", "alignment": "4", "knowledge": "2", "solution": "3"},
                              {"caption": "5", "alignment": "5", "knowledge": "5", "solution": "5"}]
    assert len(seen["rollbacks"]) == 1 and "scholar" in seen["rollbacks"][0]
    # The injection attempts are on the page as the literal text the models wrote.
    assert f"CAPTION: a lever. {HOSTILE_SCRIPT}" in seen["contents"] and f"ALIGNED: {HOSTILE_IMG}" in seen["contents"]
    for hostile in (HOSTILE_BREAKOUT, HOSTILE_FEEDBACK, HOSTILE_QUESTION, HOSTILE_GOLD):
        assert hostile in seen["body"]
    assert seen["imageWidth"] == 320  # the embedded image decoded
    shot = tab.screenshot(tmp_path / "solve.png")
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The script's buttons work: every collapsed request opens.
    assert tab.js("document.querySelector('button[data-details=open]').click(), Array.from(document.querySelectorAll('details')).every(d => d.open)")
    # The policy is a second wall: even markup injected past the escaping runs no handler.
    tab.js("document.body.insertAdjacentHTML('beforeend', '<img src=x onerror=\"window.__pwned=1\"><a href=\"javascript:window.__pwned=2\" id=jl>x</a>'),"
           " document.getElementById('jl').click(), new Promise(done => setTimeout(done, 300))")
    assert tab.js("window.__pwned === undefined") is True
    assert set(tab.js("window.__violations")) & {"script-src-attr", "script-src-elem", "script-src", "img-src"}


@pytest.mark.browser
def test_browser_eval_filters_and_navigation(runs: Runs, chromium: Chromium, tmp_path: Path) -> None:
    tab = chromium.open(write_view(runs.eval_dir, tmp_path / "eval.html"))
    assert_clean(tab)
    visible = "Array.from(document.querySelectorAll('#index-table tbody tr')).filter(r => !r.hidden).map(r => r.dataset.anchor)"

    def choose(**filters: str) -> list[str]:
        settings = "; ".join(f"document.getElementById('filter-{key}').value = {json.dumps(value)}" for key, value in filters.items())
        tab.js(f"{settings}; document.querySelectorAll('select[data-filter]').forEach(s => s.dispatchEvent(new Event('change')))")
        return tab.js(visible)

    # Before any #anchor, the index shows and every problem section is hidden.
    shown_sections = "Array.from(document.querySelectorAll('section.problem')).filter(s => !s.hidden).map(s => s.id)"
    assert tab.js(f"[document.getElementById('index').hidden, {shown_sections}]") == [False, []]
    assert tab.js("document.getElementById('filter-count').textContent") == "showing 4 of 4 (33.33% correct of 3 scored)"
    assert choose(verdict="correct") == ["p1"]
    assert choose(verdict="incorrect") == ["p2", "p4"]
    assert choose(verdict="failed", subset="testmini") == ["p3"]
    assert choose(verdict="", subset="extra") == ["p2", "p4"]
    assert choose(subset="", stop="rollback_limit") == ["p4"]
    assert choose(stop="", rollbacks="scholar") == ["p1"]
    assert choose(rollbacks="*") == ["p1", "p4"]
    assert choose(rollbacks="-") == ["p2", "p3"]
    assert tab.js("document.getElementById('filter-count').textContent") == "showing 2 of 4 (0.00% correct of 1 scored)"
    choose(rollbacks="")
    tab.screenshot(tmp_path / "eval-index.png")
    # Following a problem's link shows that problem alone, with its transcript and scores.
    tab.js("document.querySelector('a[href=\"#p1\"]').click(), new Promise(done => setTimeout(done, 100))")
    shown = tab.js("""({index: document.getElementById('index').hidden,
      sections: Array.from(document.querySelectorAll('section.problem')).filter(s => !s.hidden).map(s => s.id),
      roles: Array.from(document.querySelectorAll('#p1 article.turn')).map(a => a.dataset.role),
      scores: document.querySelectorAll('#p1 table.scores').length})""")
    assert shown == {"index": True, "sections": ["p1"], "roles": ROLLBACK_ROLES, "scores": 2}
    tab.screenshot(tmp_path / "eval-problem.png")
    tab.js("document.querySelector('#p1 nav a[href=\"#p2\"]').click(), new Promise(done => setTimeout(done, 100))")
    assert tab.js(shown_sections) == ["p2"]
    tab.js("location.hash = '#p1', new Promise(done => setTimeout(done, 100))")
    tab.js("document.querySelector('#p1 a[href=\"#index\"]').click(), new Promise(done => setTimeout(done, 100))")
    assert tab.js("document.getElementById('index').hidden") is False
    assert HOSTILE_PID in tab.js("document.getElementById('p3').innerText")
    assert_clean(tab)


def test_eval_page_survives_missing_results_and_a_damaged_problem(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval-partial"
    eval_dir.mkdir()
    (eval_dir / "manifest.json").write_text(json.dumps(eval_manifest_json("emma", ["1", "2"], eval_id="eval-partial")))
    assert "No finished problems yet" in render_view(eval_dir)  # an eval that has just started
    damaged = eval_dir / "problems" / "1"
    damaged.mkdir(parents=True)
    (damaged / "run.json").write_text("{")
    (damaged / "transcript.jsonl").write_text("")
    rows = [result_row("1", "math", None, run_dir="problems/1"), result_row("2", "math", True, run_dir="problems/2")]
    (eval_dir / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    # A written page stops at the damaged problem (docs/untrusted-content.md: one line, exit 2) ...
    with pytest.raises(DataError, match="run.json"):
        render_view(eval_dir)
    # ... the served pages show it, and the others: one damaged problem does not hide them
    from maps_autogen.report.view import PageMode
    from maps_autogen.report.view._eval_pages import load_results, render_problem_page
    from maps_autogen.report.view._pages import index_page
    from maps_autogen.report.view._render import Links

    served = Links(PageMode.SERVED, eval_dir, root="../")
    rows_read, _ = load_results(eval_dir)
    texts = [parse(str(render_problem_page(eval_dir, row, served)[1])).text() for row in rows_read]
    assert "cannot read" in texts[0] and "No transcript was saved" in texts[1]
    dom = parse(index_page(eval_dir, Links(PageMode.SERVED, eval_dir))[0])
    verdicts = [option.attrs["value"] for option in dom.find_all("select", id="filter-verdict")[0].find_all("option")]
    assert verdicts[-1] == "unknown"
