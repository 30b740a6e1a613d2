"""The HTML of `maps view` for one run folder (a solve run, or one eval problem), and what every
page shares: how a page links to images and other pages, the page frame, the kind of a folder.

Pages are rendered from the templates under templates/ (_templating.py): everything read from
the run's files (model replies above all) is printed through the template environment, which
masks secrets and escapes it, so no reply can run script in a page; the style sheet and the
script are the package's static files, allowed by their hashes in a strict
Content-Security-Policy (see _assets.py). The script reads its data from escaped `data-*`
attributes and only ever writes text with `textContent`. The live feed's fragments (_server.py)
are the same macros.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from maps_autogen._util import DataError, read_json_or_empty
from maps_autogen.records import (
    IMAGES_DIR,
    MANIFEST_FILE,
    RUN_FILE,
    TRANSCRIPT_FILE,
    TURN_FILE,
    EventRecord,
    MessageRecord,
    ProblemRecord,
    RunRecord,
    TurnInProgress,
    inside,
    parsed,
    read_run,
    read_transcript_from,
    safe_component,
)
from maps_autogen.report.view._assets import PageMode, content_security_policy
from maps_autogen.report.view._prepare import (
    NOT_THINKING,
    Event,
    Outcome,
    Thinking,
    TranscriptState,
    Turn,
    Usage,
    compact,
    outcome_of,
    team_of,
    thinking_of,
    threshold_of,
    transcript_items,
    usage_of,
    usage_so_far,
)
from maps_autogen.report.view._templating import fragment, render

INDEX_PAGE = "index.html"
PROBLEMS_PAGES = "problems"  # one page per problem: problems/<key>.html
FILES_PREFIX = "files"  # images, by their path inside the run folder: files/<path>

# Only raster formats the run writer stores; anything else is listed by name, never embedded or served.
IMAGE_MIME = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
}


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


def page(title: str, body: Markup, *, kind: str, mode: PageMode) -> str:
    """A whole HTML page around `body` (markup rendered from the templates)."""
    # The policy is our own constant text (no quote marks), printed as it is.
    return render(
        "page.html", csp=Markup(content_security_policy(mode)), title=title, kind=kind, mode=mode.value, body=body
    )


def kind_of(run_dir: Path) -> str:
    """"eval" or "solve"; a DataError naming the fix when `run_dir` is neither."""
    if not run_dir.exists():
        raise DataError(
            f"run folder {run_dir} does not exist", fix="pass a folder under runs/ written by maps solve or maps eval"
        )
    if not run_dir.is_dir():
        raise DataError(
            f"{run_dir} is a file, not a run folder",
            fix="pass the run's folder (the one holding run.json or manifest.json)",
        )
    if (run_dir / MANIFEST_FILE).is_file():
        return "eval"
    if (run_dir / RUN_FILE).is_file():
        return "solve"
    raise DataError(f"{run_dir} is not a run folder (no {RUN_FILE} or {MANIFEST_FILE})",
                    fix="pass a folder written by maps solve or maps eval")


# ----- one run folder ------------------------------------------------------------------------


@dataclass(frozen=True)
class ProblemStatement:
    question: Any
    context: Any
    options: list[Any]
    answer_format: Any
    images: list[tuple[str, str | None]]  # (file name, URL or None when not available)
    metadata: list[tuple[str, str]]


@dataclass(frozen=True)
class RunView:
    """Everything one run folder's part of a page shows."""

    problem: ProblemStatement
    outcome: Outcome
    usage: Usage
    items: list[Turn | Event]
    live: str  # the live feed's URL ("" on a static page)
    thinking: Thinking = NOT_THINKING  # the call under way (live pages only)


def turn_in_progress(run_dir: Path) -> TurnInProgress | None:
    """turn.json (the call under way), None when there is none or it cannot be read (it is
    replaced at every turn and removed when the run ends)."""
    try:
        return parsed(TurnInProgress, read_json_or_empty(run_dir / TURN_FILE), source=TURN_FILE)
    except DataError:
        return None


def read_run_or_none(run_dir: Path) -> RunRecord | None:
    """A run.json that may not be there yet or be damaged (a live feed, a problem just started)."""
    try:
        return read_run(run_dir)
    except DataError:
        return None


def _image_files(run_dir: Path, problem: ProblemRecord) -> list[str]:
    if problem.image_files:
        return problem.image_files
    folder = run_dir / IMAGES_DIR
    return [f"{IMAGES_DIR}/{path.name}" for path in sorted(folder.iterdir())] if folder.is_dir() else []


def _statement(run_dir: Path, run: RunRecord, links: Links) -> ProblemStatement:
    problem = run.problem
    return ProblemStatement(
        question=problem.question or "(no question recorded)", context=problem.context, options=problem.options,
        answer_format=problem.answer_format,
        images=[(name, links.image_src(run_dir, name)) for name in _image_files(run_dir, problem)],
        metadata=[(key, compact(value)) for key, value in problem.metadata.items()],
    )


def run_view(
    run_dir: Path,
    links: Links,
    *,
    gold: Any = None,
    correct: bool | None = None,
    include_requests: bool = True,
    live_key: str | None = None,
) -> RunView:
    """The problem, outcome, usage and transcript of one run folder (gold and verdict: an
    eval's result row's, else the run's own)."""
    run = read_run(run_dir)
    path = run_dir / TRANSCRIPT_FILE
    if not path.is_file():
        raise DataError(
            f"{run_dir} has no {TRANSCRIPT_FILE}", fix="pass a run folder written by maps solve or maps eval"
        )
    records, offset = read_transcript_from(path)
    live = ""
    if links.live:
        # The live feed carries on from exactly what this page shows.
        live = links.events("transcript", offset=offset, **({"problem": live_key} if live_key else {}))
    state = TranscriptState(team_of(run), tuple(run.problem.options), flow=run.flow)
    items = transcript_items(records, threshold_of(run), include_requests, state)
    return RunView(
        problem=_statement(run_dir, run, links),
        outcome=outcome_of(run, run.gold if gold is None else gold, run.correct if correct is None else correct,
                           state.used),
        usage=usage_so_far(run, state),
        items=items,
        live=live,
        thinking=thinking_of(run, turn_in_progress(run_dir), state) if links.live else NOT_THINKING,
    )


def render_solve(run_dir: Path, links: Links) -> tuple[str, Markup]:
    """The title and body of a solve run's page."""
    run = read_run(run_dir)
    run_id = run.run_id or run_dir.name
    body = render("solve.html", run_id=run_id, started=run.started_at or "–", version=run.maps_version or "?",
                  live=links.live, run=run_view(run_dir, links))
    return f"maps view: {run_id}", body


# ----- live fragments (_server.py) ------------------------------------------------------------


def render_records(records: Iterable[MessageRecord | EventRecord], run: RunRecord | None, include_requests: bool,
                   state: TranscriptState) -> str:
    """The turns and events of transcript records, continuing from `state` (which it updates);
    `run` is the run.json as it is now (the team it records, the threshold)."""
    if run is not None:
        state.team = team_of(run)
        state.options = tuple(run.problem.options)
        state.flow = run.flow
    return fragment("records", transcript_items(records, threshold_of(run), include_requests, state))


def render_thinking(run_dir: Path, run: RunRecord | None, state: TranscriptState) -> str:
    """The "… is thinking" marker as the live feed replaces it."""
    return fragment("thinking", thinking_of(run, turn_in_progress(run_dir), state))


def render_outcome_and_usage(run: RunRecord, state: TranscriptState | None = None) -> str:
    """The outcome card and the usage table of a run, as the live feed replaces them (while the
    run goes on, its usage counted from the turns `state` has seen)."""
    usage = usage_so_far(run, state) if state is not None else usage_of(run)
    outcome = outcome_of(run, run.gold, run.correct, state.used if state is not None else None)
    return fragment("outcome", outcome) + fragment("usage", usage)
