"""The HTML of `maps view` for an eval run: its index (summary, filters, one row per problem)
and each problem's page or section, prepared from manifest.json, results.jsonl and the problem
folders and rendered from the templates."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from maps_autogen.artifacts import read_json_or_empty, read_manifest
from maps_autogen.errors import DataError
from maps_autogen.eval.results import latest_by_pid, read_results_from
from maps_autogen.records import PROBLEMS_DIR, RESULTS_FILE, RUN_FILE, TRANSCRIPT_FILE, Manifest
from maps_autogen.safe_paths import belongs_to, problem_folder
from maps_autogen.tally import Tally, tally_rows
from maps_autogen.view.prepare import compact, cost, model_name, sum_costs, title, usage_cost
from maps_autogen.view.render import INDEX_PAGE, Links, page_key, run_view
from maps_autogen.view.templating import fragment, render

Row = Mapping[str, Any]


def load_results(eval_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """results.jsonl rows (a problem written twice, as a resumed eval does, keeps its first place
    and its last row) and the byte offset read up to; a DataError naming the line of a row that
    is not a result row."""
    records, offset = read_results_from(eval_dir / RESULTS_FILE)
    return list(latest_by_pid(records).values()), offset


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


def verdict_of(row: Row) -> str:
    """correct, incorrect, failed, unknown (not scored) or unfinished."""
    if row.get("status") == "unfinished":
        return "unfinished"
    if row.get("status") == "failed" or row.get("correct") is None:
        return "failed" if row.get("status") == "failed" else "unknown"
    return "correct" if row["correct"] else "incorrect"


def rollback_steps(row: Row) -> list[str]:
    """The steps a problem rolled back to, each once, in order."""
    steps = row.get("rollbacks") or []
    return list(dict.fromkeys(str(step.get("step") if isinstance(step, Mapping) else step) for step in steps))


def feedback_target(row: Row) -> str:
    """Where the reviewer's first feedback went (the paper's Figure 4), "none" without rollback."""
    step = row.get("feedback_step")
    if step is None:
        steps = rollback_steps(row)
        step = steps[0] if steps else "none"
    return str(step)


def _finished_tally(rows: Iterable[Row]) -> Tally:
    """The one tally (correct / scored) over the finished rows; unfinished ones are not counted."""
    return tally_rows(row for row in rows if row.get("status") != "unfinished")


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
    cost: float | None
    seconds: Any


def index_row(row: Row, href: str, anchor: str = "") -> IndexRow:
    """One problem's row in the eval index, linking to `href`."""
    usage = row.get("usage") if isinstance(row.get("usage"), Mapping) else {}
    correct = row.get("correct")
    return IndexRow(key=page_key(row.get("pid")), pid=row.get("pid"), href=href, anchor=anchor, verdict=verdict_of(row),
                    correct=correct if isinstance(correct, bool) else None, subset=str(row.get("subset", "")),
                    stop_reason=str(row.get("stop_reason") or ""), steps=rollback_steps(row), feedback=feedback_target(row),
                    prediction=row.get("prediction"), gold=row.get("gold"), calls=usage.get("calls"), cost=usage_cost(usage),
                    seconds=row.get("seconds"))


def render_index_row(row: Row, href: str, anchor: str = "") -> str:
    """One problem's row (also sent alone by the live feed)."""
    return fragment("index_row", index_row(row, href, anchor))


def _filters(rows: list[Row]) -> list[tuple[str, str, list[tuple[str, str]]]]:
    subsets = sorted({str(row.get("subset", "")) for row in rows})
    stops = sorted({str(row.get("stop_reason") or "") for row in rows} - {""})
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
        ("rollbacks", "rolled back", [("", "all"), ("*", "any rollback"), ("-", "no rollback")] + [(s, s) for s in steps]),
    ]


@dataclass(frozen=True)
class RoleRow:
    role: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: str


def _role_rows(rows: list[Row]) -> list[RoleRow]:
    """Calls, tokens and cost per role over all problems (failed ones included: they cost too)."""
    totals: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_role = row.get("usage_by_role")
        for role, usage in (by_role.items() if isinstance(by_role, Mapping) else []):
            total = totals.setdefault(str(role), {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "costs": []})
            usage = usage if isinstance(usage, Mapping) else {}
            for key in ("calls", "prompt_tokens", "completion_tokens"):
                total[key] += usage.get(key) if isinstance(usage.get(key), int) else 0
            total["costs"].append(usage_cost(usage))
    return [RoleRow(role, t["calls"], t["prompt_tokens"], t["completion_tokens"], cost(sum_costs(t["costs"]))) for role, t in totals.items()]


@dataclass(frozen=True)
class RecordedEvalTeam:
    """What the index needs of the team the eval recorded: the reviewer and the steps it scores."""

    reviewer: str | None
    scored: list[str]


def eval_team(manifest: Manifest) -> RecordedEvalTeam:
    """The reviewer and its scored steps from the manifest's recorded settings (empty when not recorded)."""
    settings = manifest.settings or {}
    team = settings.get("team") if isinstance(settings.get("team"), Mapping) else {}
    steps = [step for step in team.get("steps") or [] if isinstance(step, Mapping)]
    reviewer = next((step for step in steps if step.get("reviews") is not None and step.get("enabled", True)), None)
    if reviewer is None:
        return RecordedEvalTeam(None, [])
    return RecordedEvalTeam(str(reviewer.get("name")), [str(name) for name in reviewer.get("reviews") or []])


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
    cost: float | None
    subset_rows: list[tuple[str, str, int]]
    role_rows: list[RoleRow]
    reviewer: str
    targets: list[str]


def summary_of(manifest: dict[str, Any], rows: list[dict[str, Any]]) -> Summary:
    """The eval's headline, run facts, accuracy per subset, usage per role and the Figure 4 targets
    (the reviewed steps of the recorded team, any other step a problem's feedback went to, none)."""
    tally = _finished_tally(rows)
    typed = Manifest.model_validate(manifest)  # read_manifest checked it: these fields have their types
    by_model: dict[str, list[str]] = {}
    for role, described in typed.models.items():
        by_model.setdefault(model_name(described), []).append(str(role))
    subsets = sorted({str(row.get("subset", "")) for row in rows})
    subset_rows = []
    for subset in subsets:
        part = _finished_tally([row for row in rows if str(row.get("subset", "")) == subset])
        subset_rows.append((subset or "(none)", part.text(), part.failed))
    team = eval_team(typed)
    targets = list(dict.fromkeys([*team.scored, *(feedback_target(row) for row in rows)]))
    targets = [target for target in targets if target != "none"] + ["none"]
    return Summary(
        accuracy=tally.text(), benchmark=typed.benchmark, subsets=", ".join(map(str, typed.subsets)) or "–", method=typed.method,
        without=", ".join(typed.without) or "–", models=[(name, ", ".join(roles)) for name, roles in by_model.items()],
        created=manifest.get("created_at"),
        problems=(f"{len(rows)} done of {len(typed.ids)}" if typed.ids else f"{len(rows)} done") + f", {tally.failed} of them failed",
        cost=sum_costs(usage_cost(row.get("usage")) for row in rows), subset_rows=subset_rows, role_rows=_role_rows(rows),
        reviewer=title(team.reviewer) if team.reviewer else "reviewer", targets=targets,
    )


def render_eval_summary(manifest: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The summary section; replaced live as problems finish."""
    return fragment("summary", summary_of(manifest, rows))


def render_eval_index(eval_dir: Path, links: Links, *, single_file: bool = False) -> tuple[str, Markup, list[dict[str, Any]]]:
    """The title and body of an eval's index, and its rows. In one file, the rows link to the
    problems' sections (#p1, ...) the caller appends; otherwise to each problem's page."""
    manifest = read_manifest(eval_dir)
    finished, offset = load_results(eval_dir)
    rows = finished + unfinished_rows(eval_dir, finished) if links.live else finished
    anchors = [f"p{n}" for n in range(1, len(rows) + 1)] if single_file else [""] * len(rows)
    body = render("eval_index.html", eval_id=manifest.get("eval_id") or "", live=links.events("results", offset=offset) if links.live else "",
                  summary=summary_of(manifest, finished), filters=_filters(rows), results_file=RESULTS_FILE,
                  rows=[index_row(row, f"#{anchor}" if anchor else links.problem_page(row.get("pid")), anchor)
                        for row, anchor in zip(rows, anchors, strict=True)])
    return f"maps view: {manifest.get('eval_id') or eval_dir.name}", body, rows


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
    metadata = row.get("metadata") if isinstance(row.get("metadata"), Mapping) else {}
    correct = row.get("correct")
    return ResultCard(pid=row.get("pid"), subset=row.get("subset", ""), verdict=verdict_of(row),
                      correct=correct if isinstance(correct, bool) else None, gold=row.get("gold"), prediction=row.get("prediction"),
                      extraction=row.get("extraction"), response=row.get("response"), error=row.get("error"),
                      metadata=[(str(key), compact(value)) for key, value in metadata.items()])


def row_folder(eval_dir: Path, row: Row) -> Path | None:
    """The problem folder a result row names, when it is one of the eval's problem folders
    (`safe_paths.problem_folder`) and holds that problem's run, never another's."""
    folder = problem_folder(eval_dir, row.get("run_dir"))
    return folder if folder is not None and belongs_to(folder, row.get("pid")) else None


def _problem(eval_dir: Path, row: Row, links: Links, *, include_requests: bool, section: str, nav: list[tuple[str, str, str]]) -> Markup:
    run_dir = row_folder(eval_dir, row)
    run, error = None, None
    if run_dir is not None and (run_dir / RUN_FILE).is_file() and (run_dir / TRANSCRIPT_FILE).is_file():
        try:
            run = run_view(run_dir, links, gold=row.get("gold"), correct=row.get("correct"), include_requests=include_requests,
                           live_key=page_key(row.get("pid")))
        except DataError as failure:  # one damaged problem folder must not hide the other problems
            error = str(failure)
    return render("problem.html", section=section, nav=nav, result=_result_card(row), run=run, run_error=error, live=links.live)


def render_problem_section(eval_dir: Path, row: Row, anchor: str, nav: list[tuple[str, str, str]], links: Links) -> Markup:
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
    return f"maps view: problem {row.get('pid')}", body


def problem_nav(anchors: list[str], number: int) -> list[tuple[str, str, str]]:
    """Links to the previous and next problem section (in results order, whatever the filters)."""
    links = []
    if number > 0:
        links.append((f"#{anchors[number - 1]}", "prev", "previous"))
    if number + 1 < len(anchors):
        links.append((f"#{anchors[number + 1]}", "next", "next"))
    return links
