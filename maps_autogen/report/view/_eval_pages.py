"""The HTML of `maps view` for an eval run: its index (summary, filters, one row per problem)
and each problem's page or section, prepared from manifest.json, results.jsonl and the problem
folders and rendered from the templates."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from maps_autogen._util import DataError
from maps_autogen.eval import latest_by_pid
from maps_autogen.records import (
    PROBLEMS_DIR,
    RESULTS_FILE,
    RUN_FILE,
    TRANSCRIPT_FILE,
    Manifest,
    ModelRecord,
    ResultRow,
    RoleUsage,
    Usage,
    belongs_to,
    feedback_targets,
    problem_folder,
    read_manifest,
    read_result_rows,
)
from maps_autogen.report._figures import target_label
from maps_autogen.report._labels import title
from maps_autogen.report.view._prepare import compact, cost, free_note, model_name, sum_costs, usage_cost
from maps_autogen.report.view._render import INDEX_PAGE, Links, page_key, read_run_or_none, run_view
from maps_autogen.report.view._templating import fragment, render
from maps_autogen.scoring import Tally, first_decision, tally_rows
from maps_autogen.settings import possessive


@dataclass(frozen=True)
class Unfinished:
    """A problem with a folder but no result row yet (in flight, or left by a killed eval): the
    fields of a result row the index shows, from its run.json."""

    pid: str | int
    subset: str
    gold: Any
    stop_reason: Any
    usage: Usage | None
    run_dir: str
    status: str = "unfinished"
    correct: bool | None = None
    prediction: Any = None
    extraction: Any = None
    response: Any = None
    error: str | None = None
    rollbacks: list[str] = field(default_factory=list)
    feedback_step: str | None = None
    usage_by_role: dict[str, RoleUsage] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    seconds: float | None = None


Row = ResultRow | Unfinished


def load_results(eval_dir: Path) -> tuple[list[ResultRow], int]:
    """results.jsonl rows (a problem written twice, as a resumed eval does, keeps its first place
    and its last row) and the byte offset read up to; a DataError naming the line of a row that
    is not a result row."""
    rows, offset = read_result_rows(eval_dir / RESULTS_FILE)
    return list(latest_by_pid(rows).values()), offset


def unnamed_folders(eval_dir: Path, rows: Iterable[Row]) -> list[Path]:
    """The problem folders no row names, in name order: folders of their own inside problems/
    (`safe_paths.problem_folder`), never an entry leading out of the run."""
    named = {Path(row.run_dir).name for row in rows if row.run_dir}
    try:
        names = [entry.name for entry in (eval_dir / PROBLEMS_DIR).iterdir() if entry.name not in named]
    except OSError:
        return []
    folders = (problem_folder(eval_dir, f"{PROBLEMS_DIR}/{name}") for name in names)
    return sorted(folder for folder in folders if folder is not None and folder.is_dir())


def unfinished_rows(eval_dir: Path, rows: Iterable[Row]) -> list[Unfinished]:
    """Rows for the problems with a folder but no result yet: in flight while the eval runs (or
    left over by a killed one). Only folders no result names are read."""
    unfinished = []
    for folder in unnamed_folders(eval_dir, rows):
        if not (folder / RUN_FILE).is_file():
            continue
        run = read_run_or_none(folder)  # None: damaged (a just-created one is not there yet)
        if run is not None and run.pid is not None:
            unfinished.append(
                Unfinished(
                    pid=run.pid,
                    subset=run.subset or "",
                    gold=run.gold,
                    stop_reason=run.stop_reason,
                    usage=run.usage,
                    run_dir=f"{PROBLEMS_DIR}/{folder.name}",
                )
            )
    return unfinished


def verdict_of(row: Row) -> str:
    """correct, incorrect, failed, unknown (not scored) or unfinished."""
    if row.status in ("unfinished", "failed"):
        return row.status
    if row.correct is None:
        return "unknown"
    return "correct" if row.correct else "incorrect"


def rollback_steps(row: Row) -> list[str]:
    """The steps a problem rolled back to, each once, in order."""
    return list(dict.fromkeys(row.rollbacks))


def feedback_target(row: Row) -> str:
    """Where the reviewer's first decision went (the paper's Figure 4, `tally.first_decision`:
    a step, "none" or "no usable review"); "" for a problem still in flight (not counted)."""
    return first_decision(row) if isinstance(row, ResultRow) else ""


def _finished_tally(rows: Iterable[Row]) -> Tally:
    """The one tally (correct / scored: a row whose status is ok) over the finished rows;
    unfinished ones are not counted."""
    return tally_rows(row for row in rows if isinstance(row, ResultRow))


# ----- the index -----------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexRow:
    key: str
    pid: Any
    href: str
    anchor: str
    verdict: str
    correct: bool | None
    subset: str
    stop_reason: str
    steps: list[str]
    feedback: str
    prediction: Any
    gold: Any
    calls: Any
    cost: str
    seconds: Any


def index_row(row: Row, href: str, anchor: str = "") -> IndexRow:
    """One problem's row in the eval index, linking to `href`."""
    return IndexRow(
        key=page_key(row.pid),
        pid=row.pid,
        href=href,
        anchor=anchor,
        verdict=verdict_of(row),
        correct=row.correct,
        subset=row.subset,
        stop_reason=row.stop_reason or "",
        steps=rollback_steps(row),
        feedback=feedback_target(row),
        prediction=row.prediction,
        gold=row.gold,
        calls=row.usage.calls if row.usage else None,
        # A problem in flight has no usage recorded yet: "–", not an unknown cost.
        cost="–" if isinstance(row, Unfinished) or row.usage is None else cost(usage_cost(row.usage)),
        seconds=row.seconds,
    )


def render_index_row(row: Row, href: str, anchor: str = "") -> str:
    """One problem's row (also sent alone by the live feed)."""
    return fragment("index_row", index_row(row, href, anchor))


def _filters(rows: Sequence[Row]) -> list[tuple[str, str, list[tuple[str, str]]]]:
    subsets = sorted({row.subset for row in rows})
    stops = sorted({row.stop_reason or "" for row in rows} - {""})
    steps = sorted({step for row in rows for step in rollback_steps(row)})
    verdicts = [("", "all"), ("correct", "correct"), ("incorrect", "incorrect"), ("failed", "failed")]
    if any(verdict_of(row) == "unknown" for row in rows):
        verdicts.append(("unknown", "not scored"))
    if any(verdict_of(row) == "unfinished" for row in rows):
        verdicts.append(("unfinished", "unfinished"))
    return [
        ("verdict", "verdict", verdicts),
        ("subset", "subset", [("", "all")] + [(s, s or "(none)") for s in subsets]),
        ("stop", "stop reason", [("", "all")] + [(s, s) for s in stops]),
        (
            "rollbacks",
            "rolled back",
            [("", "all"), ("*", "any rollback"), ("-", "no rollback")] + [(s, s) for s in steps],
        ),
    ]


@dataclass(frozen=True)
class RoleRow:
    role: str
    calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    cost: str


def _role_rows(rows: Iterable[Row], models: dict[str, ModelRecord]) -> list[RoleRow]:
    """Calls, tokens and cost per role over all problems (failed ones included: they cost too)."""
    by_role: dict[str, list[RoleUsage]] = {}
    for row in rows:
        for role, usage in row.usage_by_role.items():
            by_role.setdefault(role, []).append(usage)
    return [
        RoleRow(
            role,
            sum(u.calls for u in used),
            sum(u.prompt_tokens for u in used),
            sum(u.cached_tokens for u in used),
            sum(u.completion_tokens for u in used),
            cost(sum_costs(usage_cost(u) for u in used)) + free_note([models[role]] if role in models else []),
        )
        for role, used in by_role.items()
    ]


@dataclass(frozen=True)
class Summary:
    accuracy: str
    benchmark: str
    subsets: str
    method: Any
    without: str
    models: list[tuple[str, str]]
    created: Any
    problems: str
    cost: str
    subset_rows: list[tuple[str, str, int]]
    role_rows: list[RoleRow]
    reviewer: str
    targets: list[tuple[str, str]]  # each Figure 4 bar: its value on the rows, and its name as Figure 4 names it


def summary_of(manifest: Manifest, rows: list[ResultRow]) -> Summary:
    """The eval's headline, run facts, accuracy per subset, usage per role and the Figure 4 targets
    (the reviewed steps of the team the eval recorded, any other step a problem's feedback went
    to, none)."""
    tally = _finished_tally(rows)
    by_model: dict[str, list[str]] = {}
    for role, described in manifest.models.items():
        by_model.setdefault(model_name(described, manifest.served_by(role)), []).append(role)
    subset_rows = []
    for subset in sorted({row.subset for row in rows}):
        part = _finished_tally([row for row in rows if row.subset == subset])
        subset_rows.append((subset or "(none)", part.text(), part.failed))
    team = manifest.team
    return Summary(
        accuracy=tally.text(),
        benchmark=manifest.benchmark,
        subsets=", ".join(manifest.subsets) or "–",
        method=manifest.method,
        without=", ".join(manifest.without) or "–",
        models=[(name, ", ".join(roles)) for name, roles in by_model.items()],
        created=manifest.created_at,
        problems=(f"{len(rows)} done of {len(manifest.ids)}" if manifest.ids else f"{len(rows)} done")
        + f", {tally.failed} of them failed",
        cost=cost(sum_costs(usage_cost(row.usage) if row.usage else None for row in rows))
        + (f" (the {len(rows)} finished problems)" if manifest.ids and len(rows) < len(manifest.ids) else "")
        + free_note(manifest.models.values()),
        subset_rows=subset_rows,
        role_rows=_role_rows(rows, manifest.models),
        reviewer=possessive(title(team.reviewer) if team and team.reviewer else "reviewer"),
        targets=[(target, target_label(target))
                 for target in feedback_targets([team], (feedback_target(row) for row in rows))],
    )


def render_eval_summary(manifest: Manifest, rows: list[ResultRow]) -> str:
    """The summary section; replaced live as problems finish."""
    return fragment("summary", summary_of(manifest, rows))


def render_eval_index(eval_dir: Path, links: Links, *, single_file: bool = False) -> tuple[str, Markup, list[Row]]:
    """The title and body of an eval's index, and its rows. In one file, the rows link to the
    problems' sections (#p1, ...) the caller appends; otherwise to each problem's page."""
    manifest = read_manifest(eval_dir)
    finished, offset = load_results(eval_dir)
    rows: list[Row] = [*finished, *unfinished_rows(eval_dir, finished)] if links.live else list(finished)
    anchors = [f"p{n}" for n in range(1, len(rows) + 1)] if single_file else [""] * len(rows)
    body = render(
        "eval_index.html",
        eval_id=manifest.eval_id or "",
        live=links.events("results", offset=offset) if links.live else "",
        summary=summary_of(manifest, finished),
        filters=_filters(rows),
        results_file=RESULTS_FILE,
        rows=[
            index_row(row, f"#{anchor}" if anchor else links.problem_page(row.pid), anchor)
            for row, anchor in zip(rows, anchors, strict=True)
        ],
    )
    return f"maps view: {manifest.eval_id or eval_dir.name}", body, rows


# ----- one problem ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultCard:
    pid: Any
    subset: Any
    verdict: str
    correct: bool | None
    gold: Any
    prediction: Any
    extraction: Any
    response: Any
    error: Any
    metadata: list[tuple[str, str]]


def _result_card(row: Row) -> ResultCard:
    return ResultCard(pid=row.pid, subset=row.subset, verdict=verdict_of(row), correct=row.correct, gold=row.gold,
                      prediction=row.prediction, extraction=row.extraction, response=row.response, error=row.error,
                      metadata=[(key, compact(value)) for key, value in row.metadata.items()])


def row_folder(eval_dir: Path, row: Row) -> Path | None:
    """The problem folder a result row names, when it is one of the eval's problem folders
    (`safe_paths.problem_folder`) and holds that problem's run, never another's."""
    folder = problem_folder(eval_dir, row.run_dir)
    return folder if folder is not None and belongs_to(folder, row.pid) else None


def _problem(
    eval_dir: Path, row: Row, links: Links, *, include_requests: bool, section: str, nav: list[tuple[str, str, str]]
) -> Markup:
    run_dir = row_folder(eval_dir, row)
    run, error = None, None
    if run_dir is not None and (run_dir / RUN_FILE).is_file() and (run_dir / TRANSCRIPT_FILE).is_file():
        try:
            run = run_view(run_dir, links, gold=row.gold, correct=row.correct, include_requests=include_requests,
                           live_key=page_key(row.pid))
        except DataError as failure:
            if not links.live:
                raise  # written pages: one line naming the file and its line, exit 2, nothing written
            error = str(failure)  # served: one damaged problem folder must not hide the other problems
    return render(
        "problem.html", section=section, nav=nav, result=_result_card(row), run=run, run_error=error, live=links.live
    )


def render_problem_section(
    eval_dir: Path, row: Row, anchor: str, nav: list[tuple[str, str, str]], links: Links
) -> Markup:
    """One problem inside a single-file eval page. The requests repeat the prompts in every turn;
    over hundreds of problems they would dominate the file, so they are left out here."""
    return _problem(eval_dir, row, links, include_requests=False, section=anchor, nav=nav)


def render_problem_page(eval_dir: Path, row: Row, links: Links, *, previous: Any = None, following: Any = None,
                        include_requests: bool = False) -> tuple[str, Markup]:
    """The title and body of one problem's own page (an export or the server), with links to the
    index and to the previous and next problem."""
    nav = [(links.root + INDEX_PAGE, "", "← all problems")]
    if previous is not None:
        nav.append((links.problem_page(previous), "prev", "previous"))
    if following is not None:
        nav.append((links.problem_page(following), "next", "next"))
    body = _problem(eval_dir, row, links, include_requests=include_requests, section="", nav=nav)
    return f"maps view: problem {row.pid}", body


def neighbours(rows: Sequence[Row], number: int) -> tuple[Any, Any]:
    """The pids of the problems before and after row `number` (None at either end)."""
    previous = rows[number - 1].pid if number else None
    following = rows[number + 1].pid if number + 1 < len(rows) else None
    return previous, following


def problem_nav(anchors: list[str], number: int) -> list[tuple[str, str, str]]:
    """Links to the previous and next problem section (in results order, whatever the filters)."""
    links = []
    if number > 0:
        links.append((f"#{anchors[number - 1]}", "prev", "previous"))
    if number + 1 < len(anchors):
        links.append((f"#{anchors[number + 1]}", "next", "next"))
    return links
