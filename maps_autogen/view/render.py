"""The HTML of `maps view`: a solve run's page, an eval run's index and each problem's page.

Everything read from the run's files (model replies above all) goes through `_e` (html.escape)
and is shown as plain text, never as markup, so no reply can run script in a page; the style
sheet and the script are the package's static files, allowed by their hashes in a strict
Content-Security-Policy (see assets.py). The script reads its data from escaped `data-*`
attributes and only ever writes text with `textContent`. The same functions render the live
feed's fragments (server.py), so a turn looks the same whether it was there when the page
loaded or arrived while it was open.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from maps_autogen.artifacts import read_json_or_empty, read_jsonl_from, read_manifest, read_run
from maps_autogen.errors import DataError
from maps_autogen.redact import redact
from maps_autogen.eval.results import latest_by_pid
from maps_autogen.tally import Tally, tally_rows
from maps_autogen.records import (
    IMAGES_DIR, MANIFEST_FILE, PROBLEMS_DIR, RESULTS_FILE, RUN_FILE, TRANSCRIPT_FILE, Manifest, dumped, feedback_targets, read_result_rows,
)
from maps_autogen.safe_paths import belongs_to, inside, problem_folder, safe_component
from maps_autogen.view.assets import CSS, SCRIPT, PageMode, content_security_policy

INDEX_PAGE = "index.html"
PROBLEMS_PAGES = "problems"  # one page per problem: problems/<key>.html
FILES_PREFIX = "files"  # images, by their path inside the run folder: files/<path>

# Only raster formats the run writer stores; anything else is listed by name, never embedded or served.
IMAGE_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".bmp": "image/bmp"}
_KNOWN_ROLES = {"user_proxy", "interpreter", "aligner", "scholar", "solver", "critic"}
_EVENT_TEXT = {
    "interpreter_skipped": "Interpreter skipped",
    "images_dropped": "Images reach no step",
    "solver_unparsed": "Solver reply not parsed",
    "critic_unparseable": "Critic reply unparseable",
    "error": "Error",
}

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head>
<body data-kind="{kind}" data-mode="{mode}">
<main>
{body}
</main>
<script>{script}</script>
</body>
</html>
"""

# Opens or closes the collapsed parts (requests, raw Critic replies) of the page or problem it is in.
TOOLBAR = (
    '<div class="toolbar"><span class="muted">Details:</span>'
    '<button type="button" data-details="open">expand all</button>'
    '<button type="button" data-details="close">collapse all</button></div>'
)
# Shown on served pages: the script says whether the live feed is connected.
LIVE_STATUS = '<p class="live-status muted" id="live-status">live updates: connecting…</p>'


# ----- small helpers -------------------------------------------------------------------------


def _e(value: Any) -> str:
    """Escaped text for element content and quoted attribute values (the one escaping point):
    secrets masked first, so no page or live fragment can show a key a reply echoed."""
    return html.escape(redact("" if value is None else str(value)), quote=True)


def _text(value: Any, cls: str = "text") -> str:
    """Model or file text shown literally (pre-wrap keeps its layout)."""
    return f'<div class="{cls}">{_e(value)}</div>'


def _class_token(value: Any) -> str:
    """A value safe to use inside a class name (roles come from files too)."""
    token = str(value or "")
    return token if token in _KNOWN_ROLES else "other"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# The formatters below return plain text; callers escape it like any other text.
def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else ("–" if value is None else str(value))


def _cost(value: Any) -> str:
    """One way to show a cost everywhere: dollars, or "unknown" when a model has no price."""
    return f"${value:.4f}" if _is_number(value) else "unknown"


def _seconds(value: Any) -> str:
    return f"{value:.1f} s" if _is_number(value) else "–"


def usage_cost(usage: Any) -> float | None:
    """The cost of a usage record: nothing was spent when no call was made (whatever the record
    says); None (unknown) when calls were made and a price was missing."""
    usage = usage if isinstance(usage, dict) else {}
    if usage.get("calls") == 0:
        return 0.0
    cost = usage.get("cost")
    return float(cost) if _is_number(cost) else None


def _sum_costs(costs: Iterable[float | None]) -> float | None:
    """The total, or None (unknown) if any part is unknown."""
    values = list(costs)
    return None if any(cost is None for cost in values) else sum(values)  # type: ignore[arg-type]


def _compact(value: Any) -> str:
    """Short text for a small JSON value (manifest fields, metadata)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def model_name(described: Any) -> str:
    """A model as people name it: "gpt-4o (openai)" from a recorded model description."""
    if isinstance(described, dict):
        name, endpoint = described.get("model"), described.get("endpoint")
        return f"{name} ({endpoint})" if name and endpoint else str(name or endpoint or "unknown")
    return str(described)


def _kv(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<dt>{_e(key)}</dt><dd>{value}</dd>" for key, value in pairs)
    return f'<dl class="kv">{rows}</dl>' if rows else ""


def _verdict_pill(correct: Any) -> str:
    if correct is True:
        return '<span class="pill good verdict">correct</span>'
    if correct is False:
        return '<span class="pill bad verdict">incorrect</span>'
    return ""


def page_key(pid: Any) -> str:
    """A problem page's file name (without .html): the problem's one safe name."""
    return safe_component(pid)


@dataclass
class Links:
    """How a page refers to what is outside it: images embedded as data: URLs (one file) or linked
    as files under `files/` (an export folder, the server), and the other pages. `root` leads
    from the page to the top of the export or server ("" for the index, "../" for a problem)."""

    mode: PageMode
    top: Path
    root: str = ""
    linked_images: set[str] = field(default_factory=set)  # paths under `top` (the export copies them)

    @property
    def live(self) -> bool:
        return self.mode is PageMode.SERVED

    def image_src(self, run_dir: Path, relative: Any) -> str | None:
        path = inside(run_dir, relative)
        mime = IMAGE_MIME.get(path.suffix.lower()) if path else None
        if path is None or mime is None or not path.is_file():
            return None
        if self.mode is PageMode.SINGLE_FILE:
            return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
        under_top = path.relative_to(self.top.resolve()).as_posix()
        self.linked_images.add(under_top)
        return f"{self.root}{FILES_PREFIX}/{quote(under_top)}"

    def problem_page(self, pid: Any) -> str:
        return f"{self.root}{PROBLEMS_PAGES}/{page_key(pid)}.html"

    def events(self, feed: str, **query: Any) -> str:
        """The URL of a live feed (served pages only)."""
        params = "&".join(f"{key}={quote(str(value))}" for key, value in query.items())
        return f"{self.root}events/{feed}" + (f"?{params}" if params else "")


def page(title: str, body: str, *, kind: str, mode: PageMode) -> str:
    """A whole HTML page around `body` (already-built markup)."""
    return PAGE.format(csp=content_security_policy(mode), title=_e(title), css=CSS, kind=kind, mode=mode.value, body=body, script=SCRIPT)


# ----- one solve run -------------------------------------------------------------------------


def _image_files(run_dir: Path, run: dict[str, Any]) -> list[str]:
    files = (run.get("problem") or {}).get("image_files")
    if isinstance(files, list) and files:
        return [str(name) for name in files]
    folder = run_dir / IMAGES_DIR
    return [f"{IMAGES_DIR}/{path.name}" for path in sorted(folder.iterdir())] if folder.is_dir() else []


def _render_images(run_dir: Path, files: list[str], links: Links) -> str:
    figures = []
    for name in files:
        url = links.image_src(run_dir, name)
        picture = f'<img src="{_e(url)}" alt="{_e(name)}">' if url else '<span class="muted">(image not available)</span>'
        figures.append(f"<figure>{picture}<figcaption>{_e(name)}</figcaption></figure>")
    return f'<div class="images">{"".join(figures)}</div>' if figures else ""


def _render_problem(run_dir: Path, run: dict[str, Any], links: Links) -> str:
    problem = run.get("problem") or {}
    parts = ['<section class="card problem-statement"><h2>Problem</h2>']
    parts.append(_text(problem.get("question", "(no question recorded)"), "text question"))
    if problem.get("context"):
        parts.append("<h3>Context</h3>" + _text(problem["context"]))
    options = problem.get("options") or []
    if options:
        items = "".join(f"<li>{_e(option)}</li>" for option in options)
        parts.append(f'<h3>Options</h3><ol type="A" class="options">{items}</ol>')
    if problem.get("answer_format"):
        parts.append("<h3>Answer format</h3>" + _text(problem["answer_format"]))
    parts.append(_render_images(run_dir, _image_files(run_dir, run), links))
    metadata = problem.get("metadata") or {}
    if isinstance(metadata, dict) and metadata:
        parts.append("<h3>Metadata</h3>" + _kv((key, _e(_compact(value))) for key, value in metadata.items()))
    parts.append("</section>")
    return "".join(parts)


def render_outcome(run: dict[str, Any], gold: Any, correct: Any) -> str:
    """The outcome card (answer, verdict, stop reason, rollbacks, usage); replaced live when run.json changes."""
    status = run.get("status")
    pairs: list[tuple[str, str]] = []
    if status != "finished":
        pairs.append(("status", f'<span class="pill warn">{_e(status or "unknown")}</span> the run has not finished'))
    pairs.append(("final answer", f'<span class="answer final-answer">{_e(run.get("final_answer", ""))}</span>'))
    if gold is not None:
        pairs.append(("gold answer", f'<span class="answer gold-answer">{_e(gold)}</span>'))
    if correct is not None:
        pairs.append(("verdict", _verdict_pill(correct)))
    pairs.append(("stop reason", f'<span class="pill stop-reason">{_e(run.get("stop_reason") or "–")}</span>'))
    rollbacks = run.get("rollbacks") or []
    if rollbacks:
        steps = ", ".join(f"{_e(r.get('step'))} ({_e(r.get('dimension'))})" for r in rollbacks if isinstance(r, dict))
        pairs.append(("rollbacks", steps))
    if run.get("error"):
        pairs.append(("error", _text(run["error"])))
    usage = run.get("usage") or {}
    pairs.append(("usage", _e(f"{_number(usage.get('calls'))} calls, {_number(usage.get('prompt_tokens'))} prompt + "
                              f"{_number(usage.get('completion_tokens'))} completion tokens, {_cost(usage_cost(usage))}, "
                              f"{_seconds(run.get('seconds'))}")))
    return f'<section class="card outcome" id="outcome"><h2>Outcome</h2>{_kv(pairs)}</section>'


def render_usage_table(run: dict[str, Any]) -> str:
    """Models and usage per role, and the flow's settings; replaced live when run.json changes."""
    by_role = run.get("usage_by_role") or {}
    models = run.get("models") or {}
    if not by_role and not models:
        return '<section class="usage" id="usage"></section>'
    head = ("<tr><th>role</th><th>model</th><th class=num>calls</th><th class=num>prompt tokens</th>"
            "<th class=num>completion tokens</th><th class=num>cost</th><th class=num>time</th></tr>")
    body = []
    for role in dict.fromkeys([*models, *by_role]):
        row = by_role.get(role) or {}
        body.append(
            f"<tr><td>{_e(role)}</td><td>{_e(model_name(models.get(role) or ''))}</td><td class=num>{_e(_number(row.get('calls')))}</td>"
            f"<td class=num>{_e(_number(row.get('prompt_tokens')))}</td><td class=num>{_e(_number(row.get('completion_tokens')))}</td>"
            f"<td class=num>{_e(_cost(usage_cost(row))) if row else '–'}</td><td class=num>{_seconds(row.get('seconds'))}</td></tr>"
        )
    flow = run.get("flow") or {}
    settings = ""
    if flow:
        settings = _kv([
            ("steps", _e(" → ".join(map(str, flow.get("steps") or [])))),
            ("critic", _e(f"{'on' if flow.get('critic') else 'off'}, threshold {flow.get('threshold')}, "
                          f"max rollbacks {flow.get('max_rollbacks')}, final review {'on' if flow.get('final_review') else 'off'}")),
            ("without", _e(", ".join(map(str, flow.get("without") or [])) or "–")),
        ])
    return (f'<section class="card usage" id="usage"><h2>Models and usage</h2><table class="usage-table"><thead>{head}</thead>'
            f'<tbody>{"".join(body)}</tbody></table>{settings}</section>')


def _render_scores(parsed: dict[str, Any], threshold: float | None) -> str:
    scores = parsed.get("scores") or {}
    if not isinstance(scores, dict) or not scores:
        return ""
    worst = parsed.get("worst_step")
    raw_feedback = parsed.get("feedback")
    feedback: dict[str, Any] = raw_feedback if isinstance(raw_feedback, dict) else {}
    head = "".join(f"<th>{_e(dim)}</th>" for dim in scores)
    cells = []
    for dim, score in scores.items():
        low = _is_number(score) and threshold is not None and score < threshold
        cells.append(f'<td class="num score {"low" if low else "pass"}" data-dimension="{_e(dim)}">{_e(score)}</td>')
    notes = "".join(f'<td class="feedback">{_e(feedback.get(dim, ""))}</td>' for dim in scores)
    caption = "Critic's scores" + (f" (worst: {_e(worst)})" if worst else "")
    return (f'<table class="scores"><caption>{caption}</caption><thead><tr><th></th>{head}</tr></thead>'
            f'<tbody><tr><th>score</th>{"".join(cells)}</tr><tr><th>feedback</th>{notes}</tr></tbody></table>')


def _render_request(request: Any) -> str:
    """What the role was sent, collapsed: each message's text, image parts by file name."""
    if not isinstance(request, list) or not request:
        return ""
    parts = []
    for message in request:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, list):
            pieces = []
            for piece in content:
                if isinstance(piece, dict) and piece.get("type") == "text":
                    pieces.append(str(piece.get("text", "")))
                elif isinstance(piece, dict):
                    pieces.append(f"[{piece.get('type')}: {piece.get('file') or '…'}]")
            content = "\n".join(pieces)
        parts.append(f'<div class="request-part"><strong>{_e(message.get("role"))}</strong>{_text(content)}</div>')
    return f"<details class=request><summary>request sent ({len(parts)} messages)</summary>{''.join(parts)}</details>"


def _render_message(record: dict[str, Any], threshold: float | None, include_requests: bool, number: int) -> str:
    role = record.get("role") or "other"
    raw_parsed = record.get("parsed")
    parsed: dict[str, Any] = raw_parsed if isinstance(raw_parsed, dict) else {}
    meta = [f"turn {number}", f"step {record.get('step', '–')}", f"round {record.get('round', '–')}"]
    if record.get("model"):
        meta.append(str(record["model"]))
    usage = record.get("usage") or {}
    if usage:
        meta.append(f"{_number(usage.get('prompt_tokens'))} → {_number(usage.get('completion_tokens'))} tokens")
        meta.append(_cost(usage.get("cost")))
        if usage.get("attempts", 1) not in (None, 1):
            meta.append(f"{usage['attempts']} attempts")
        if usage.get("cached"):
            meta.append("cached")
    if record.get("seconds") is not None:
        meta.append(_seconds(record.get("seconds")))
    badges = '<span class="pill warn revision">revision</span>' if record.get("revision") else ""
    body = [_text(record.get("content", ""), "text content")]
    if role == "critic" and parsed.get("scores"):
        # The scores table says it all; the raw JSON reply stays one click away.
        body = [_render_scores(parsed, threshold), f"<details><summary>raw reply</summary>{body[0]}</details>"]
    if role == "solver" and "final_answer" in parsed:
        note = "" if parsed.get("parsed", True) else ' <span class="pill warn">not parsed: fell back to the text</span>'
        body.append(f'<div class="solver-answer"><strong>Answer:</strong> <span class="answer">{_e(parsed["final_answer"])}</span>{note}</div>')
    if include_requests:
        body.append(_render_request(record.get("request")))
    images = record.get("images")
    if isinstance(images, list) and images:
        body.append(f'<div class="muted">images: {_e(", ".join(map(str, images)))}</div>')
    return (f'<article class="card turn role-{_class_token(role)}" data-role="{_e(role)}" data-round="{_e(record.get("round"))}">'
            f'<header><span class="agent">{_e(record.get("agent") or role)}</span>{badges}'
            f'<span class="meta">{_e(" · ".join(meta))}</span></header>{"".join(body)}</article>')


def _render_event(record: dict[str, Any], question: Any = None) -> str:
    event = str(record.get("event") or "event")
    if event == "rollback":
        scores = ", ".join(f"{key} {value}" for key, value in (record.get("scores") or {}).items())
        sent_back = f'<div class="question">Question sent back: <span class="text">{_e(question)}</span></div>' if question else ""
        return (f'<div class="event rollback" data-event="rollback">↺ Rollback {_e(record.get("number"))}: '
                f're-running from the {_e(record.get("step"))} step ({_e(record.get("dimension"))} scored low) '
                f'<span class="detail">{_e(scores)}</span>{sent_back}</div>')
    if event == "stop":
        return (f'<div class="event stop" data-event="stop">■ Stopped: {_e(record.get("stop_reason"))} '
                f'<span class="detail">final answer: {_e(record.get("final_answer"))}</span></div>')
    cls = "error" if event == "error" else "warn"
    label = _EVENT_TEXT.get(event, event)
    return (f'<div class="event {cls}" data-event="{_e(event)}">! {_e(label)}: '
            f'<span class="detail">{_e(record.get("detail", ""))}</span></div>')


@dataclass
class TranscriptState:
    """What rendering a record needs from the records before it: the turn count (turns are
    numbered) and the last Critic's feedback (a rollback shows the question it sends back).
    A live feed keeps one across its batches."""

    turns: int = 0
    feedback: dict[str, Any] = field(default_factory=dict)

    def absorb(self, record: dict[str, Any]) -> None:
        if record.get("type") != "message":
            return
        self.turns += 1
        parsed = record.get("parsed")
        if record.get("role") == "critic" and isinstance(parsed, dict) and isinstance(parsed.get("feedback"), dict):
            self.feedback = parsed["feedback"]


def render_records(records: Iterable[dict[str, Any]], threshold: float | None, include_requests: bool,
                   state: TranscriptState | None = None) -> str:
    """The turns and events of transcript records, continuing from `state` (which it updates)."""
    state = state if state is not None else TranscriptState()
    parts = []
    for record in records:
        state.absorb(record)
        if record.get("type") == "message":
            parts.append(_render_message(record, threshold, include_requests, state.turns))
        elif record.get("type") == "event":
            # The rollback record carries the question it sent back; older runs only the verdict.
            parts.append(_render_event(record, record.get("question") or state.feedback.get(str(record.get("dimension")))))
    return "".join(parts)


def threshold_of(run: dict[str, Any]) -> float | None:
    threshold = (run.get("flow") or {}).get("threshold")
    return threshold if _is_number(threshold) else None


def _render_transcript(run_dir: Path, run: dict[str, Any], include_requests: bool, links: Links, live_key: str | None) -> str:
    path = run_dir / TRANSCRIPT_FILE
    if not path.is_file():
        raise DataError(f"{run_dir} has no {TRANSCRIPT_FILE}", fix="pass a run folder written by maps solve or maps eval")
    records, offset = read_jsonl_from(path)
    turns_html = render_records(records, threshold_of(run), include_requests)
    empty = "" if turns_html else '<p class="muted empty">The transcript is empty.</p>'
    live = ""
    if links.live:
        # The live feed carries on from exactly what this page shows.
        query = {"offset": offset, **({"problem": live_key} if live_key else {})}
        live = f' data-live="{_e(links.events("transcript", **query))}"'
    return f'<section class="transcript"{live}><h2>Transcript</h2>{empty}{turns_html}</section>'


def _solve_body(run_dir: Path, links: Links, *, gold: Any = None, correct: Any = None, include_requests: bool = True,
                live_key: str | None = None) -> str:
    """The problem, outcome, usage and transcript of one run folder."""
    run = read_run(run_dir)
    gold = run.get("gold") if gold is None else gold
    correct = run.get("correct") if correct is None else correct
    return "".join([
        _render_problem(run_dir, run, links),
        render_outcome(run, gold, correct),
        render_usage_table(run),
        _render_transcript(run_dir, run, include_requests, links, live_key),
    ])


def render_solve(run_dir: Path, links: Links) -> tuple[str, str]:
    """The title and body of a solve run's page."""
    run = read_run(run_dir)
    run_id = run.get("run_id") or run_dir.name
    heading = (f'<h1>MAPS run <span class="run-id">{_e(run_id)}</span></h1>'
               f'<p class="muted">started {_e(run.get("started_at", "–"))} · maps {_e(run.get("maps_version", "?"))}</p>')
    status = LIVE_STATUS if links.live else ""
    return f"maps view: {run_id}", heading + status + TOOLBAR + _solve_body(run_dir, links)


# ----- an eval run ---------------------------------------------------------------------------


def load_results(eval_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """results.jsonl rows (a problem written twice, as a resumed eval does, keeps its first place
    and its last row) and the byte offset read up to; a DataError naming the line of a row that
    is not a result row."""
    rows, offset = read_result_rows(eval_dir / RESULTS_FILE)
    return [dumped(row) for row in latest_by_pid(rows).values()], offset


def unfinished_rows(eval_dir: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows for the problems with a folder but no result yet: in flight while the eval runs (or
    left over by a killed one). Only folders no result names are read."""
    named = {Path(str(row.get("run_dir"))).name for row in rows if row.get("run_dir")}
    try:
        folders = sorted(entry for entry in (eval_dir / PROBLEMS_DIR).iterdir() if entry.name not in named and entry.is_dir())
    except OSError:
        return []
    unfinished = []
    for folder in folders:
        run = read_json_or_empty(folder / RUN_FILE)  # {}: just created, or damaged
        if run.get("pid") is not None:
            unfinished.append({"pid": run["pid"], "subset": run.get("subset", ""), "status": "unfinished", "gold": run.get("gold"),
                               "stop_reason": run.get("stop_reason"), "usage": run.get("usage") or {}, "run_dir": f"{PROBLEMS_DIR}/{folder.name}"})
    return unfinished


def _verdict_of(row: dict[str, Any]) -> str:
    if row.get("status") == "unfinished":
        return "unfinished"
    if row.get("status") == "failed" or row.get("correct") is None:
        return "failed" if row.get("status") == "failed" else "unknown"
    return "correct" if row["correct"] else "incorrect"


def _rollback_steps(row: dict[str, Any]) -> list[str]:
    steps = row.get("rollbacks") or []
    return list(dict.fromkeys(str(step.get("step") if isinstance(step, dict) else step) for step in steps))


def _feedback_target(row: dict[str, Any]) -> str:
    """Where the Critic's first feedback went (the paper's Figure 4), "none" without rollback."""
    step = row.get("feedback_step")
    if step is None:
        steps = _rollback_steps(row)
        step = steps[0] if steps else "none"
    return str(step)


def _finished_tally(rows: list[dict[str, Any]]) -> Tally:
    """The one tally (correct / scored) over the finished rows; unfinished ones are not counted."""
    return tally_rows(row for row in rows if row.get("status") != "unfinished")


def _select(key: str, label: str, options: list[tuple[str, str]]) -> str:
    items = "".join(f'<option value="{_e(value)}">{_e(text)}</option>' for value, text in options)
    return f'<label>{_e(label)} <select data-filter="{_e(key)}" id="filter-{_e(key)}">{items}</select></label>'


def _render_filters(rows: list[dict[str, Any]]) -> str:
    subsets = sorted({str(row.get("subset", "")) for row in rows})
    stops = sorted({str(row.get("stop_reason") or "") for row in rows} - {""})
    steps = sorted({step for row in rows for step in _rollback_steps(row)})
    verdicts = [("", "all"), ("correct", "correct"), ("incorrect", "incorrect"), ("failed", "failed")]
    if any(_verdict_of(row) == "unknown" for row in rows):
        verdicts.append(("unknown", "not scored"))
    if any(_verdict_of(row) == "unfinished" for row in rows):
        verdicts.append(("unfinished", "unfinished"))
    return '<div class="filters">' + "".join([
        _select("verdict", "verdict", verdicts),
        _select("subset", "subset", [("", "all")] + [(s, s or "(none)") for s in subsets]),
        _select("stop", "stop reason", [("", "all")] + [(s, s) for s in stops]),
        _select("rollbacks", "rolled back", [("", "all"), ("*", "any rollback"), ("-", "no rollback")] + [(s, s) for s in steps]),
    ]) + '<span id="filter-count" class="muted"></span></div>'


def render_index_row(row: dict[str, Any], href: str, anchor: str = "") -> str:
    """One problem's row in the eval index, linking to `href`."""
    verdict = _verdict_of(row)
    steps = _rollback_steps(row)
    usage = row.get("usage") or {}
    pill = _verdict_pill(row.get("correct")) or f'<span class="pill warn">{_e(verdict)}</span>'
    anchor_attr = f' data-anchor="{_e(anchor)}"' if anchor else ""
    return (f'<tr data-key="{_e(page_key(row.get("pid")))}" data-verdict="{_e(verdict)}" data-subset="{_e(row.get("subset", ""))}" '
            f'data-stop="{_e(row.get("stop_reason") or "")}" data-rollbacks="{_e(" ".join(steps))}" '
            f'data-feedback="{_e(_feedback_target(row))}"{anchor_attr}>'
            f'<td><a href="{_e(href)}">{_e(row.get("pid"))}</a></td><td>{_e(row.get("subset", ""))}</td><td>{pill}</td>'
            f'<td>{_e(row.get("prediction"))}</td><td>{_e(row.get("gold"))}</td><td>{_e(row.get("stop_reason") or "–")}</td>'
            f'<td>{_e(", ".join(steps) or "–")}</td><td class=num>{_e(_number(usage.get("calls")))}</td>'
            f'<td class=num>{_e(_cost(usage_cost(usage)))}</td><td class=num>{_e(_seconds(row.get("seconds")))}</td></tr>')


def _render_subset_table(rows: list[dict[str, Any]]) -> str:
    subsets = sorted({str(row.get("subset", "")) for row in rows})
    body = []
    for subset in subsets:
        tally = _finished_tally([row for row in rows if str(row.get("subset", "")) == subset])
        body.append(f"<tr><td>{_e(subset or '(none)')}</td><td class=num>{_e(tally.text())}</td><td class=num>{tally.failed}</td></tr>")
    return ('<table class="subsets"><caption>Accuracy per subset</caption><thead><tr><th>subset</th><th class=num>accuracy</th>'
            f'<th class=num>failed</th></tr></thead><tbody>{"".join(body)}</tbody></table>')


def _render_role_usage(rows: list[dict[str, Any]]) -> str:
    """Calls, tokens and cost per role over all problems (failed ones included: they cost too)."""
    totals: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_role = row.get("usage_by_role")
        for role, usage in (by_role.items() if isinstance(by_role, dict) else []):
            total = totals.setdefault(str(role), {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "costs": []})
            usage = usage if isinstance(usage, dict) else {}
            for key in ("calls", "prompt_tokens", "completion_tokens"):
                total[key] += usage.get(key) if isinstance(usage.get(key), int) else 0
            total["costs"].append(usage_cost(usage))
    if not totals:
        return ""
    body = "".join(
        f"<tr><td>{_e(role)}</td><td class=num>{_e(_number(t['calls']))}</td><td class=num>{_e(_number(t['prompt_tokens']))}</td>"
        f"<td class=num>{_e(_number(t['completion_tokens']))}</td><td class=num>{_e(_cost(_sum_costs(t['costs'])))}</td></tr>"
        for role, t in totals.items()
    )
    return ('<table class="role-usage"><caption>Cost and tokens per role</caption><thead><tr><th>role</th><th class=num>calls</th>'
            '<th class=num>prompt tokens</th><th class=num>completion tokens</th><th class=num>cost</th></tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _render_models(models: Any) -> str:
    """Each model by name with the roles that used it."""
    if not isinstance(models, dict) or not models:
        return "–"
    by_model: dict[str, list[str]] = {}
    for role, described in models.items():
        by_model.setdefault(model_name(described), []).append(str(role))
    return "<br>".join(f'<span class="model">{_e(name)}</span> <span class="muted">{_e(", ".join(roles))}</span>'
                       for name, roles in by_model.items())


def _render_histogram(targets: list[str]) -> str:
    """Figure 4's bars (one per feedback target of the recorded team): the script counts the
    shown, scored rows' `data-feedback` into them."""
    rows = "".join(f'<tr data-target="{target}"><td>{target}</td><td><progress max="1" value="0"></progress></td>'
                   f'<td class="num count"></td><td class="num share"></td></tr>' for target in map(_e, targets))
    return ('<table id="feedback-histogram"><caption>Where the Critic\'s feedback went (Figure 4; shown problems, failed ones left out)'
            f'</caption><thead><tr><th>step</th><th></th><th class=num>problems</th><th class=num>share</th></tr></thead><tbody>{rows}</tbody></table>')


def render_eval_summary(manifest: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The eval's headline, run facts, accuracy per subset, usage per role and the Figure 4 table;
    replaced live as problems finish."""
    tally = _finished_tally(rows)
    typed = Manifest.model_validate(manifest)  # read_manifest checked it: these fields have their types
    targets = feedback_targets([typed.team], (row.get("feedback_step") for row in rows))
    pairs = [
        ("benchmark", _e(typed.benchmark)),
        ("subsets", _e(", ".join(map(str, typed.subsets)) or "–")),
        ("method", _e(typed.method)),
        ("without", _e(", ".join(typed.without) or "–")),
        ("models", _render_models(manifest.get("models"))),
        ("created", _e(manifest.get("created_at"))),
        ("problems", _e(f"{len(rows)} done of {len(typed.ids)}" if typed.ids else f"{len(rows)} done")
         + _e(f", {tally.failed} of them failed")),
        ("cost", _e(_cost(_sum_costs(usage_cost(row.get("usage")) for row in rows)))),
    ]
    accuracy = (f'<p class="headline">Accuracy <strong id="accuracy">{_e(tally.text())}</strong> '
                f'<span class="muted">(correct of the scored problems; failed ones are counted apart)</span></p>')
    return (f'<section id="summary">{accuracy}<section class="card">{_kv(pairs)}</section>'
            f'<section class="card stats">{_render_subset_table(rows)}{_render_role_usage(rows)}{_render_histogram(targets)}</section></section>')


INDEX_HEAD = ("<tr><th>problem</th><th>subset</th><th>verdict</th><th>prediction</th><th>gold</th><th>stop reason</th>"
              "<th>rolled back</th><th class=num>calls</th><th class=num>cost</th><th class=num>time</th></tr>")


def render_eval_index(eval_dir: Path, links: Links, *, single_file: bool = False) -> tuple[str, str, list[dict[str, Any]]]:
    """The title and body of an eval's index, and its rows. In one file, the rows link to the
    problems' sections (#p1, ...) the caller appends; otherwise to each problem's page."""
    manifest = read_manifest(eval_dir)
    finished, offset = load_results(eval_dir)
    rows = finished + unfinished_rows(eval_dir, finished) if links.live else finished
    anchors = [f"p{number}" for number in range(1, len(rows) + 1)] if single_file else [""] * len(rows)
    table_rows = "".join(render_index_row(row, f"#{anchor}" if anchor else links.problem_page(row.get("pid")), anchor)
                         for row, anchor in zip(rows, anchors, strict=True))
    live = f' data-live="{_e(links.events("results", offset=offset))}"' if links.live else ""
    empty = "" if rows else f'<p class="muted empty">No finished problems yet ({RESULTS_FILE} is empty or missing).</p>'
    index = (f'<section id="index"{live}><h2>Problems</h2>{_render_filters(rows)}'
             f'<table id="index-table"><thead>{INDEX_HEAD}</thead><tbody>{table_rows}</tbody></table>{empty}'
             '<button type="button" id="show-more" hidden></button></section>')
    status = LIVE_STATUS if links.live else ""
    heading = f'<h1>MAPS eval <span class="run-id">{_e(manifest.get("eval_id") or "")}</span></h1>{status}'
    title = f"maps view: {manifest.get('eval_id') or eval_dir.name}"
    return title, heading + render_eval_summary(manifest, finished) + index, rows


def _result_card(row: dict[str, Any]) -> str:
    pairs = [
        ("subset", _e(row.get("subset", ""))),
        ("verdict", _verdict_pill(row.get("correct")) or _e(_verdict_of(row))),
        ("gold", _e(row.get("gold"))),
        ("prediction", _e(row.get("prediction"))),
        ("extraction", _e(row.get("extraction"))),
        ("response", _text(row.get("response"))),
    ]
    if row.get("error"):
        pairs.append(("error", _text(row["error"])))
    metadata = row.get("metadata") or {}
    if isinstance(metadata, dict):
        pairs.extend((key, _e(_compact(value))) for key, value in metadata.items())
    return f'<section class="card result">{_kv(pairs)}</section>'


def row_folder(eval_dir: Path, row: dict[str, Any]) -> Path | None:
    """The problem folder a result row names, when it is one of the eval's problem folders
    (`safe_paths.problem_folder`) and holds that problem's run, never another's."""
    folder = problem_folder(eval_dir, row.get("run_dir"))
    return folder if folder is not None and belongs_to(folder, row.get("pid")) else None


def _problem_transcript(eval_dir: Path, row: dict[str, Any], links: Links, include_requests: bool) -> str:
    run_dir = row_folder(eval_dir, row)
    if run_dir is None or not (run_dir / RUN_FILE).is_file() or not (run_dir / TRANSCRIPT_FILE).is_file():
        return '<p class="muted">No transcript was saved for this problem.</p>'
    try:
        return TOOLBAR + _solve_body(run_dir, links, gold=row.get("gold"), correct=row.get("correct"),
                                     include_requests=include_requests, live_key=page_key(row.get("pid")))
    except DataError as error:  # one damaged problem folder must not hide the other problems
        return f'<p class="event error">! {_e(error)}</p>'


def render_problem_section(eval_dir: Path, row: dict[str, Any], anchor: str, nav: str, links: Links) -> str:
    """One problem inside a single-file eval page. The requests repeat the prompts in every turn;
    over hundreds of problems they would dominate the file, so they are left out here."""
    return (f'<section class="problem" id="{anchor}" data-pid="{_e(row.get("pid"))}">'
            f'<nav class="toolbar"><a href="#index">← all problems</a>{nav}</nav>'
            f'<h2>Problem {_e(row.get("pid"))}</h2>{_result_card(row)}{_problem_transcript(eval_dir, row, links, False)}</section>')


def render_problem_page(eval_dir: Path, row: dict[str, Any], links: Links, *, previous: Any = None, following: Any = None,
                        include_requests: bool = False) -> tuple[str, str]:
    """The title and body of one problem's own page (an export or the server), with links to the
    index and to the previous and next problem."""
    nav = [f'<a href="{_e(links.root + INDEX_PAGE)}">← all problems</a>']
    if previous is not None:
        nav.append(f'<a href="{_e(links.problem_page(previous))}" rel="prev">previous</a>')
    if following is not None:
        nav.append(f'<a href="{_e(links.problem_page(following))}" rel="next">next</a>')
    status = LIVE_STATUS if links.live else ""
    body = (f'<nav class="toolbar">{"".join(nav)}</nav><h1>Problem <span class="pid">{_e(row.get("pid"))}</span></h1>{status}'
            f'{_result_card(row)}{_problem_transcript(eval_dir, row, links, include_requests)}')
    return f"maps view: problem {row.get('pid')}", body


def problem_nav(anchors: list[str], number: int) -> str:
    """Links to the previous and next problem section (in results order, whatever the filters)."""
    links = []
    if number > 0:
        links.append(f'<a href="#{anchors[number - 1]}">previous</a>')
    if number + 1 < len(anchors):
        links.append(f'<a href="#{anchors[number + 1]}">next</a>')
    return "".join(links)


def kind_of(run_dir: Path) -> str:
    """"eval" or "solve"; a DataError naming the fix when `run_dir` is neither."""
    if not run_dir.exists():
        raise DataError(f"run folder {run_dir} does not exist", fix="pass a folder under runs/ written by maps solve or maps eval")
    if not run_dir.is_dir():
        raise DataError(f"{run_dir} is a file, not a run folder", fix="pass the run's folder (the one holding run.json or manifest.json)")
    if (run_dir / MANIFEST_FILE).is_file():
        return "eval"
    if (run_dir / RUN_FILE).is_file():
        return "solve"
    raise DataError(f"{run_dir} is not a run folder (no {RUN_FILE} or {MANIFEST_FILE})",
                    fix="pass a folder written by maps solve or maps eval")
