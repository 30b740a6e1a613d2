"""`maps view`: one self-contained HTML page for a solve run or an eval run.

The page needs nothing from the network: images are embedded as data URLs, the CSS and the
small script are inline and allowed by their SHA-256 hashes in a strict Content-Security-Policy.
Everything read from the run's files (model replies above all) goes through `html.escape` and
is shown as plain text, never as markup, so no reply can run script in the page. The script
reads its data from escaped `data-*` attributes and only ever writes with `textContent`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import tempfile
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from maps_autogen.errors import DataError
from maps_autogen.redact import redact
from maps_autogen.transcript import IMAGES_DIR, RUN_FILE, TRANSCRIPT_FILE, read_jsonl, read_run, read_transcript

VIEW_FILE = "view.html"
MANIFEST_FILE = "manifest.json"
RESULTS_FILE = "results.jsonl"

# Only raster formats the run writer stores; anything else is listed by name, not embedded.
_IMAGE_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".bmp": "image/bmp"}
_KNOWN_ROLES = {"user_proxy", "interpreter", "aligner", "scholar", "solver", "critic"}
_EVENT_TEXT = {
    "interpreter_skipped": "Interpreter skipped",
    "solver_unparsed": "Solver reply not parsed",
    "critic_unparseable": "Critic reply unparseable",
    "error": "Error",
}

# ----- page templates ------------------------------------------------------------------------

CSS = """
:root { --fg: #1d2330; --muted: #5d6675; --line: #d9dde4; --bg: #f6f7f9; --card: #fff;
  --user_proxy: #6b7280; --interpreter: #a21caf; --aligner: #1d4ed8; --scholar: #15803d;
  --solver: #b45309; --critic: #b91c1c; --other: #374151; --good: #15803d; --bad: #b91c1c; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 20px 60px; }
h1 { font-size: 1.35rem; margin: 8px 0 4px; } h2 { font-size: 1.15rem; margin: 22px 0 8px; }
h3 { font-size: 1rem; margin: 14px 0 6px; }
.card > h2:first-child { margin-top: 2px; }
a { color: #1d4ed8; }
.muted { color: var(--muted); }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; margin: 10px 0; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 6px 0 0;
  font: 13.5px/1.45 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
.text.question { font-family: inherit; font-size: 16px; }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 4px 0; }
.kv dt { color: var(--muted); } .kv dd { margin: 0; overflow-wrap: anywhere; } .kv dd > .text { margin: 0; }
table { border-collapse: collapse; margin: 6px 0; font-size: 14px; }
caption { text-align: left; font-weight: 600; padding: 2px 0; }
th, td { border: 1px solid var(--line); padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #eef0f4; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.pill { display: inline-block; border-radius: 999px; padding: 0 9px; font-size: 13px; font-weight: 600;
  border: 1px solid var(--line); background: #eef0f4; margin-right: 4px; }
.pill.good { background: #dcfce7; color: var(--good); border-color: #86efac; }
.pill.bad { background: #fee2e2; color: var(--bad); border-color: #fca5a5; }
.pill.warn { background: #fef3c7; color: #92400e; border-color: #fcd34d; }
.images { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 8px; }
.images figure { margin: 0; } .images img { max-width: 100%; max-height: 420px; border: 1px solid var(--line); background: #fff; }
.images figcaption { font-size: 12px; color: var(--muted); }
.turn { border-left: 5px solid var(--other); }
.turn header { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: baseline; }
.turn .agent { font-weight: 700; color: var(--other); }
.turn .meta { font-size: 12.5px; color: var(--muted); }
.role-user_proxy { border-left-color: var(--user_proxy); } .role-user_proxy .agent { color: var(--user_proxy); }
.role-interpreter { border-left-color: var(--interpreter); } .role-interpreter .agent { color: var(--interpreter); }
.role-aligner { border-left-color: var(--aligner); } .role-aligner .agent { color: var(--aligner); }
.role-scholar { border-left-color: var(--scholar); } .role-scholar .agent { color: var(--scholar); }
.role-solver { border-left-color: var(--solver); } .role-solver .agent { color: var(--solver); }
.role-critic { border-left-color: var(--critic); } .role-critic .agent { color: var(--critic); }
.scores td.score { text-align: center; }
.scores td.low { background: #fee2e2; color: var(--bad); font-weight: 700; }
.scores td.pass { background: #dcfce7; color: var(--good); }
.event { border-radius: 6px; padding: 7px 12px; margin: 10px 0; font-weight: 600; }
.event .detail { font-weight: 400; }
.event.rollback { background: #e0f2fe; border: 1px solid #7dd3fc; color: #075985; }
.event.stop { background: #eef0f4; border: 1px solid var(--line); }
.event.warn { background: #fef3c7; border: 1px solid #fcd34d; color: #92400e; }
.event.error { background: #fee2e2; border: 1px solid #fca5a5; color: var(--bad); }
.answer { font-size: 1.05rem; }
details > summary { cursor: pointer; color: var(--muted); font-size: 13px; margin-top: 6px; }
.request-part { border-top: 1px dashed var(--line); margin-top: 6px; padding-top: 4px; }
.filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; margin: 8px 0; }
.filters label { font-size: 14px; color: var(--muted); }
.filters select { font: inherit; font-size: 14px; }
#index-table tr[hidden] { display: none; }
.problem { border-top: 3px solid var(--line); margin-top: 28px; padding-top: 6px; }
.toolbar { display: flex; gap: 12px; align-items: center; font-size: 14px; margin: 6px 0; }
button { font: inherit; font-size: 13px; padding: 2px 10px; border: 1px solid var(--line); border-radius: 6px; background: #fff; cursor: pointer; }
"""

# The page's only script. It carries no data (that lives in escaped data-* attributes), so its
# hash is a constant; without it the page still reads, just without filters and single-problem view.
SCRIPT = """
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("#index-table tbody tr"));
  var problems = Array.prototype.slice.call(document.querySelectorAll("section.problem"));
  var index = document.getElementById("index");
  var filters = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  var counter = document.getElementById("filter-count");

  function matches(row) {
    return filters.every(function (select) {
      var want = select.value, key = select.getAttribute("data-filter");
      if (want === "") { return true; }
      var have = row.getAttribute("data-" + key) || "";
      if (key === "rollbacks") {
        if (want === "-") { return have === ""; }
        if (want === "*") { return have !== ""; }
        return (" " + have + " ").indexOf(" " + want + " ") >= 0;
      }
      return have === want;
    });
  }

  function applyFilters() {
    var shown = 0, correct = 0;
    rows.forEach(function (row) {
      var keep = matches(row);
      row.hidden = !keep;
      if (keep) { shown += 1; if (row.getAttribute("data-verdict") === "correct") { correct += 1; } }
    });
    if (counter) {
      var share = shown ? " (" + (100 * correct / shown).toFixed(1) + "% correct)" : "";
      counter.textContent = "showing " + shown + " of " + rows.length + share;
    }
  }

  // With problem sections, show either the index or the one problem the URL's #anchor names.
  function route() {
    if (!problems.length) { return; }
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    var one = target !== null && problems.indexOf(target) >= 0;
    problems.forEach(function (section) { section.hidden = !(one && section === target); });
    if (index) { index.hidden = one; }
    if (one) { window.scrollTo(0, 0); }
  }

  function setDetails(button) {
    var scope = button.closest("section.problem") || document;
    var open = button.getAttribute("data-details") === "open";
    Array.prototype.forEach.call(scope.querySelectorAll("details"), function (d) { d.open = open; });
  }

  filters.forEach(function (select) { select.addEventListener("change", applyFilters); });
  Array.prototype.forEach.call(document.querySelectorAll("button[data-details]"), function (button) {
    button.addEventListener("click", function () { setDetails(button); });
  });
  window.addEventListener("hashchange", route);
  applyFilters();
  route();
  document.documentElement.setAttribute("data-ready", "1");
})();
"""


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


# Nothing may load from anywhere but the page itself: images only as data: URLs, the one style
# sheet and the one script only by hash (which also forbids inline event handlers and javascript:
# URLs), no forms, no <base>.
CSP = "; ".join([
    "default-src 'none'",
    "img-src data:",
    f"style-src {_csp_hash(CSS)}",
    f"script-src {_csp_hash(SCRIPT)}",
    "base-uri 'none'",
    "form-action 'none'",
])

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
<body data-kind="{kind}">
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


# ----- small helpers -------------------------------------------------------------------------


def _e(value: Any) -> str:
    """Escaped text for element content and quoted attribute values."""
    return html.escape("" if value is None else str(value), quote=True)


def _text(value: Any, cls: str = "text") -> str:
    """Model or file text shown literally (pre-wrap keeps its layout)."""
    return f'<div class="{cls}">{_e(value)}</div>'


def _class_token(value: Any) -> str:
    """A value safe to use inside a class name (roles come from files too)."""
    token = str(value or "")
    return token if token in _KNOWN_ROLES else "other"


# The three formatters below return plain text; callers escape it like any other text.
def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else ("–" if value is None else str(value))


def _cost(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "unknown"


def _seconds(value: Any) -> str:
    return f"{value:.1f} s" if isinstance(value, (int, float)) and not isinstance(value, bool) else "–"


def _compact(value: Any) -> str:
    """Short text for a small JSON value (manifest fields, metadata)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _kv(pairs: Iterable[tuple[str, Any]]) -> str:
    rows = "".join(f"<dt>{_e(key)}</dt><dd>{value}</dd>" for key, value in pairs)
    return f'<dl class="kv">{rows}</dl>' if rows else ""


def _verdict_pill(correct: Any) -> str:
    if correct is True:
        return '<span class="pill good verdict">correct</span>'
    if correct is False:
        return '<span class="pill bad verdict">incorrect</span>'
    return ""


def _inside(base: Path, relative: Any) -> Path | None:
    """`base/relative` if it stays inside `base` (a damaged or hostile file must not make the page
    embed files from elsewhere on disk)."""
    if not isinstance(relative, str) or not relative:
        return None
    root = base.resolve()
    path = (root / relative).resolve()
    return path if path.is_relative_to(root) else None


def _image_data_url(run_dir: Path, relative: Any) -> str | None:
    path = _inside(run_dir, relative)
    mime = _IMAGE_MIME.get(path.suffix.lower()) if path else None
    if path is None or mime is None or not path.is_file():
        return None
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


# ----- one solve run -------------------------------------------------------------------------


def _image_files(run_dir: Path, run: dict[str, Any]) -> list[str]:
    files = (run.get("problem") or {}).get("image_files")
    if isinstance(files, list) and files:
        return [str(name) for name in files]
    folder = run_dir / IMAGES_DIR
    return [f"{IMAGES_DIR}/{path.name}" for path in sorted(folder.iterdir())] if folder.is_dir() else []


def _render_images(run_dir: Path, files: list[str]) -> str:
    figures = []
    for name in files:
        url = _image_data_url(run_dir, name)
        picture = f'<img src="{_e(url)}" alt="{_e(name)}">' if url else '<span class="muted">(image not available)</span>'
        figures.append(f"<figure>{picture}<figcaption>{_e(name)}</figcaption></figure>")
    return f'<div class="images">{"".join(figures)}</div>' if figures else ""


def _render_problem(run_dir: Path, run: dict[str, Any]) -> str:
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
    parts.append(_render_images(run_dir, _image_files(run_dir, run)))
    metadata = problem.get("metadata") or {}
    if isinstance(metadata, dict) and metadata:
        parts.append("<h3>Metadata</h3>" + _kv((key, _e(_compact(value))) for key, value in metadata.items()))
    parts.append("</section>")
    return "".join(parts)


def _render_outcome(run: dict[str, Any], gold: Any, correct: Any) -> str:
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
                              f"{_number(usage.get('completion_tokens'))} completion tokens, {_cost(usage.get('cost'))}, "
                              f"{_seconds(run.get('seconds'))}")))
    return f'<section class="card outcome"><h2>Outcome</h2>{_kv(pairs)}</section>'


def _render_usage_table(run: dict[str, Any]) -> str:
    by_role = run.get("usage_by_role") or {}
    models = run.get("models") or {}
    if not by_role and not models:
        return ""
    head = ("<tr><th>role</th><th>model</th><th class=num>calls</th><th class=num>prompt tokens</th>"
            "<th class=num>completion tokens</th><th class=num>cost</th><th class=num>time</th></tr>")
    body = []
    for role in dict.fromkeys([*models, *by_role]):
        row = by_role.get(role) or {}
        model = models.get(role) or {}
        name = f"{model.get('endpoint', '')}:{model.get('model', '')}" if isinstance(model, dict) else model
        body.append(
            f"<tr><td>{_e(role)}</td><td>{_e(name)}</td><td class=num>{_e(_number(row.get('calls')))}</td>"
            f"<td class=num>{_e(_number(row.get('prompt_tokens')))}</td><td class=num>{_e(_number(row.get('completion_tokens')))}</td>"
            f"<td class=num>{_cost(row.get('cost')) if row else '–'}</td><td class=num>{_seconds(row.get('seconds'))}</td></tr>"
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
    return (f'<section class="card usage"><h2>Models and usage</h2><table class="usage-table"><thead>{head}</thead>'
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
        low = isinstance(score, (int, float)) and threshold is not None and score < threshold
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


def _render_event(record: dict[str, Any]) -> str:
    event = str(record.get("event") or "event")
    if event == "rollback":
        scores = ", ".join(f"{key} {value}" for key, value in (record.get("scores") or {}).items())
        return (f'<div class="event rollback" data-event="rollback">↺ Rollback {_e(record.get("number"))}: '
                f're-running from the {_e(record.get("step"))} step ({_e(record.get("dimension"))} scored low) '
                f'<span class="detail">{_e(scores)}</span></div>')
    if event == "stop":
        return (f'<div class="event stop" data-event="stop">■ Stopped: {_e(record.get("stop_reason"))} '
                f'<span class="detail">final answer: {_e(record.get("final_answer"))}</span></div>')
    cls = "error" if event == "error" else "warn"
    label = _EVENT_TEXT.get(event, event)
    return (f'<div class="event {cls}" data-event="{_e(event)}">! {_e(label)}: '
            f'<span class="detail">{_e(record.get("detail", ""))}</span></div>')


def _render_transcript(records: list[dict[str, Any]], threshold: float | None, include_requests: bool) -> str:
    parts, number = [], 0
    for record in records:
        if record.get("type") == "message":
            number += 1
            parts.append(_render_message(record, threshold, include_requests, number))
        elif record.get("type") == "event":
            parts.append(_render_event(record))
    if not parts:
        parts.append('<p class="muted">The transcript is empty.</p>')
    return f'<section class="transcript"><h2>Transcript</h2>{"".join(parts)}</section>'


def _solve_body(run_dir: Path, *, gold: Any = None, correct: Any = None, include_requests: bool = True) -> str:
    """The problem, outcome, usage and transcript of one run folder."""
    run = read_run(run_dir)
    records = list(read_transcript(run_dir))
    gold = run.get("gold") if gold is None else gold
    correct = run.get("correct") if correct is None else correct
    threshold = (run.get("flow") or {}).get("threshold")
    threshold = threshold if isinstance(threshold, (int, float)) else None
    return "".join([
        _render_problem(run_dir, run),
        _render_outcome(run, gold, correct),
        _render_usage_table(run),
        _render_transcript(records, threshold, include_requests),
    ])


def _render_solve(run_dir: Path) -> tuple[str, str]:
    run = read_run(run_dir)
    run_id = run.get("run_id") or run_dir.name
    heading = (f'<h1>MAPS run <span class="run-id">{_e(run_id)}</span></h1>'
               f'<p class="muted">started {_e(run.get("started_at", "–"))} · maps {_e(run.get("maps_version", "?"))}</p>')
    return f"maps view: {run_id}", heading + TOOLBAR + _solve_body(run_dir)


# ----- an eval run ---------------------------------------------------------------------------


def _load_results(eval_dir: Path) -> list[dict[str, Any]]:
    """results.jsonl rows; a problem written twice (a resumed eval) keeps its last row."""
    path = eval_dir / RESULTS_FILE
    if not path.is_file():
        return []
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for row in read_jsonl(path):
        rows[(str(row.get("subset", "")), str(row.get("pid", "")))] = row
    return list(rows.values())


def _verdict_of(row: dict[str, Any]) -> str:
    if row.get("status") == "failed" or row.get("correct") is None:
        return "failed" if row.get("status") == "failed" else "unknown"
    return "correct" if row["correct"] else "incorrect"


def _rollback_steps(row: dict[str, Any]) -> list[str]:
    steps = row.get("rollbacks") or []
    return list(dict.fromkeys(str(step.get("step") if isinstance(step, dict) else step) for step in steps))


def _accuracy(rows: list[dict[str, Any]]) -> str:
    correct = sum(1 for row in rows if row.get("correct") is True)
    share = f"{100 * correct / len(rows):.1f}%" if rows else "–"
    return f"{share} ({correct}/{len(rows)})"


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
    return '<div class="filters">' + "".join([
        _select("verdict", "verdict", verdicts),
        _select("subset", "subset", [("", "all")] + [(s, s or "(none)") for s in subsets]),
        _select("stop", "stop reason", [("", "all")] + [(s, s) for s in stops]),
        _select("rollbacks", "rolled back", [("", "all"), ("*", "any rollback"), ("-", "no rollback")] + [(s, s) for s in steps]),
    ]) + '<span id="filter-count" class="muted"></span></div>'


def _render_index_row(row: dict[str, Any], anchor: str) -> str:
    verdict = _verdict_of(row)
    steps = _rollback_steps(row)
    usage = row.get("usage") or {}
    pill = _verdict_pill(row.get("correct")) or f'<span class="pill warn">{_e(verdict)}</span>'
    return (f'<tr data-verdict="{_e(verdict)}" data-subset="{_e(row.get("subset", ""))}" data-stop="{_e(row.get("stop_reason") or "")}" '
            f'data-rollbacks="{_e(" ".join(steps))}" data-anchor="{anchor}">'
            f'<td><a href="#{anchor}">{_e(row.get("pid"))}</a></td><td>{_e(row.get("subset", ""))}</td><td>{pill}</td>'
            f'<td>{_e(row.get("prediction"))}</td><td>{_e(row.get("gold"))}</td><td>{_e(row.get("stop_reason") or "–")}</td>'
            f'<td>{_e(", ".join(steps) or "–")}</td><td class=num>{_e(_number(usage.get("calls")))}</td>'
            f'<td class=num>{_cost(usage.get("cost"))}</td><td class=num>{_seconds(row.get("seconds"))}</td></tr>')


def _render_subset_table(rows: list[dict[str, Any]]) -> str:
    subsets = sorted({str(row.get("subset", "")) for row in rows})
    if len(subsets) < 2:
        return ""
    body = "".join(
        f"<tr><td>{_e(subset)}</td><td class=num>{_e(_accuracy([r for r in rows if str(r.get('subset', '')) == subset]))}</td></tr>"
        for subset in subsets
    )
    return f'<table class="subsets"><thead><tr><th>subset</th><th class=num>accuracy</th></tr></thead><tbody>{body}</tbody></table>'


def _render_eval_header(manifest: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    failed = sum(1 for row in rows if row.get("status") == "failed")
    cost = [(row.get("usage") or {}).get("cost") for row in rows]
    total_cost = sum(c for c in cost if isinstance(c, (int, float))) if rows and all(isinstance(c, (int, float)) for c in cost) else None
    pairs = [
        ("benchmark", _e(manifest.get("benchmark"))),
        ("subsets", _e(", ".join(map(str, manifest.get("subsets") or [])) or "–")),
        ("method", _e(manifest.get("method"))),
        ("without", _e(", ".join(map(str, manifest.get("without") or [])) or "–")),
        ("models", _e(_compact(manifest.get("models") or {}))),
        ("created", _e(manifest.get("created_at"))),
        ("problems", f"{len(rows)} done, {failed} of them failed"),
        ("cost", _cost(total_cost)),
    ]
    accuracy = (f'<p class="headline">Accuracy <strong id="accuracy">{_e(_accuracy(rows))}</strong> '
                f'<span class="muted">(failed problems count as incorrect)</span></p>')
    return (f'<h1>MAPS eval <span class="run-id">{_e(manifest.get("eval_id") or "")}</span></h1>{accuracy}'
            f'<section class="card">{_kv(pairs)}{_render_subset_table(rows)}</section>')


def _render_problem_section(eval_dir: Path, row: dict[str, Any], anchor: str, nav: str) -> str:
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
    parts = [f'<section class="problem" id="{anchor}" data-pid="{_e(row.get("pid"))}">',
             f'<nav class="toolbar"><a href="#index">← all problems</a>{nav}</nav>',
             f'<h2>Problem {_e(row.get("pid"))}</h2><section class="card result">{_kv(pairs)}</section>']
    run_dir = _inside(eval_dir, row.get("run_dir"))
    if run_dir is not None and (run_dir / RUN_FILE).is_file() and (run_dir / TRANSCRIPT_FILE).is_file():
        try:
            # The requests repeat the prompts in every turn; over hundreds of problems they would
            # dominate the file, so the eval page leaves them out (`maps view` on the problem's folder shows them).
            parts.append(TOOLBAR + _solve_body(run_dir, gold=row.get("gold"), correct=row.get("correct"), include_requests=False))
        except DataError as error:  # one damaged problem folder must not hide the other problems
            parts.append(f'<p class="event error">! {_e(error)}</p>')
    else:
        parts.append('<p class="muted">No transcript was saved for this problem.</p>')
    parts.append("</section>")
    return "".join(parts)


def _render_eval(eval_dir: Path) -> tuple[str, str]:
    manifest = _read_manifest(eval_dir)
    rows = _load_results(eval_dir)
    anchors = [f"p{number}" for number in range(1, len(rows) + 1)]  # pids can hold any character
    head = ("<tr><th>problem</th><th>subset</th><th>verdict</th><th>prediction</th><th>gold</th><th>stop reason</th>"
            "<th>rolled back</th><th class=num>calls</th><th class=num>cost</th><th class=num>time</th></tr>")
    table_rows = "".join(_render_index_row(row, anchor) for row, anchor in zip(rows, anchors, strict=True))
    index = (f'<section id="index"><h2>Problems</h2>{_render_filters(rows)}'
             f'<table id="index-table"><thead>{head}</thead><tbody>{table_rows}</tbody></table>'
             + ("" if rows else f'<p class="muted">No finished problems yet ({RESULTS_FILE} is empty or missing).</p>')
             + "</section>")
    sections = "".join(
        _render_problem_section(eval_dir, row, anchor, _problem_nav(anchors, number))
        for number, (row, anchor) in enumerate(zip(rows, anchors, strict=True))
    )
    title = f"maps view: {manifest.get('eval_id') or eval_dir.name}"
    return title, _render_eval_header(manifest, rows) + index + sections


def _problem_nav(anchors: list[str], number: int) -> str:
    """Links to the previous and next problem (in results order, whatever the filters)."""
    links = []
    if number > 0:
        links.append(f'<a href="#{anchors[number - 1]}">previous</a>')
    if number + 1 < len(anchors):
        links.append(f'<a href="#{anchors[number + 1]}">next</a>')
    return "".join(links)


def _read_manifest(eval_dir: Path) -> dict[str, Any]:
    path = eval_dir / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise DataError(f"cannot read {path}: {error}", fix="the eval folder may be damaged") from None
    if not isinstance(manifest, dict):
        raise DataError(f"{path} is not a JSON object", fix="the eval folder may be damaged")
    return manifest


# ----- public API ----------------------------------------------------------------------------


def _kind_of(run_dir: Path) -> str:
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


def render_view(run_dir: Path) -> str:
    """The whole HTML page for a solve run folder (run.json) or an eval run folder
    (manifest.json); raises DataError when `run_dir` is neither."""
    run_dir = Path(run_dir)
    kind = _kind_of(run_dir)
    title, body = _render_eval(run_dir) if kind == "eval" else _render_solve(run_dir)
    return PAGE.format(csp=CSP, title=_e(title), css=CSS, kind=kind, body=body, script=SCRIPT)


def write_view(run_dir: Path, out: Path | None = None) -> Path:
    """Render `run_dir` and write the page to `out` (default: RUN/view.html); returns the path."""
    run_dir = Path(run_dir)
    page = redact(render_view(run_dir))
    target = Path(out) if out is not None else run_dir / VIEW_FILE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        # errors="replace": a hand-edited transcript may hold a lone surrogate that UTF-8 cannot encode
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
            handle.write(page)
        os.chmod(temp, 0o644)  # mkstemp makes it private; the page is meant to be opened and shared
        try:
            os.replace(temp, target)
        finally:
            Path(temp).unlink(missing_ok=True)
    except OSError as error:
        raise DataError(f"cannot write {target}: {error.strerror or error}", fix="choose another --out path") from None
    return target


__all__ = ["render_view", "write_view"]
