"""Writing `maps view` pages: one self-contained file, or a folder that scales to thousands of
problems (an index, one page per problem, the images as files)."""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from maps_autogen._util import DataError, copy_file, folder_built_beside, write_text_atomic
from maps_autogen.report.view._assets import PageMode
from maps_autogen.report.view._eval_pages import (
    Row,
    neighbours,
    problem_nav,
    render_eval_index,
    render_problem_page,
    render_problem_section,
)
from maps_autogen.report.view._render import (
    FILES_PREFIX,
    INDEX_PAGE,
    PROBLEMS_PAGES,
    Links,
    kind_of,
    page,
    page_key,
    render_solve,
)

VIEW_FILE = "view.html"
VIEW_DIR = "view"
# Marks a folder as written by `maps view --out DIR` and lists its files, so a later export may
# replace it; a folder holding anything else is never emptied (_util/_folders.py).
EXPORT_MARKER = ".maps-view"


def render_view(run_dir: Path) -> str:
    """The whole self-contained HTML page (images embedded) for a solve run folder (run.json) or
    an eval run folder (manifest.json: its index, then every problem as a section); raises
    DataError when `run_dir` is neither."""
    run_dir = Path(run_dir)
    kind = kind_of(run_dir)
    links = Links(PageMode.SINGLE_FILE, run_dir)
    if kind == "solve":
        title, body = render_solve(run_dir, links)
    else:
        title, body, rows = render_eval_index(run_dir, links, single_file=True)
        anchors = [f"p{number}" for number in range(1, len(rows) + 1)]
        body += Markup("").join(render_problem_section(run_dir, row, anchor, problem_nav(anchors, number), links)
                                for number, (row, anchor) in enumerate(zip(rows, anchors, strict=True)))
    return page(title, body, kind=kind, mode=PageMode.SINGLE_FILE)


def _write_text(target: Path, text: str) -> None:
    """errors="replace": a hand-edited transcript may hold a lone surrogate."""
    write_text_atomic(target, text, errors="replace")


def write_view(run_dir: Path, out: Path | None = None) -> Path:
    """Render `run_dir` as one self-contained page written to `out` (default: RUN/view.html)."""
    run_dir = Path(run_dir)
    text = render_view(run_dir)
    target = Path(out) if out is not None else run_dir / VIEW_FILE
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_text(target, text)
    except OSError as error:
        raise DataError(f"cannot write {target}: {error.strerror or error}", fix="choose another --out path") from None
    return target


def index_page(run_dir: Path, links: Links) -> tuple[str, list[Row] | None]:
    """The top page of a run folder linked as `links` says (an export, the server): a solve
    run's page or an eval's index; and the eval's rows (None for a solve run)."""
    if kind_of(run_dir) == "solve":
        title, body = render_solve(run_dir, links)
        return page(title, body, kind="solve", mode=links.mode), None
    title, body, rows = render_eval_index(run_dir, links)
    return page(title, body, kind="eval", mode=links.mode), rows


def _export_pages(run_dir: Path, folder: Path) -> None:
    """Write index.html, problems/<key>.html and files/<image path> into `folder`."""
    index_links = Links(PageMode.EXPORT, run_dir)
    text, rows = index_page(run_dir, index_links)
    _write_text(folder / INDEX_PAGE, text)
    linked = index_links.linked_images
    if rows is not None:
        (folder / PROBLEMS_PAGES).mkdir()
        problem_links = Links(PageMode.EXPORT, run_dir, root="../")
        for number, row in enumerate(rows):
            previous, following = neighbours(rows, number)
            title, body = render_problem_page(run_dir, row, problem_links, previous=previous, following=following)
            _write_text(
                folder / PROBLEMS_PAGES / f"{page_key(row.pid)}.html",
                page(title, body, kind="problem", mode=PageMode.EXPORT),
            )
        linked = problem_links.linked_images
    root = run_dir.resolve()
    for relative in sorted(linked):
        target = folder / FILES_PREFIX / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        copy_file(root / relative, target)


def export_view(run_dir: Path, out: Path | None = None) -> Path:
    """Write `run_dir` as a folder of pages (default: RUN/view/): index.html, one page per
    problem and the images as files, with relative links, so it opens from disk, can be zipped
    and shared, and the index of a 5,000-problem eval loads at once. The folder is built beside
    the target and swapped in whole; an existing target is replaced only if an earlier export
    wrote it. Returns the index page's path."""
    run_dir = Path(run_dir)
    kind_of(run_dir)  # not a run folder: said before anything is written
    target = Path(out) if out is not None else run_dir / VIEW_DIR
    with folder_built_beside(target, fix="choose a new or empty --out folder", marker=EXPORT_MARKER,
                             written_by="maps view (a later export may replace this folder)") as building:
        _export_pages(run_dir, building)
    return target / INDEX_PAGE


def write_pages(run_dir: Path, out: Path | None = None) -> Path:
    """What `maps view RUN [--out PATH]` writes: one self-contained file for a solve run (or for
    any run when PATH ends in .html), else a folder of pages (an eval run's default: RUN/view/)."""
    run_dir = Path(run_dir)
    single = out.suffix.lower() in (".html", ".htm") if out is not None else kind_of(run_dir) == "solve"
    return write_view(run_dir, out) if single else export_view(run_dir, out)
