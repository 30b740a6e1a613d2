"""`maps view RUN --out DIR`: the folder export that scales (an index, a page per problem, the
images as files), its index's statistics, and the 1,000-problem export in headless Chromium."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from maps_autogen._util._errors import DataError
from maps_autogen.report.view import export_view, write_pages
from maps_autogen.report.view._render import page_key
from tests.helpers.chromium import Chromium, chromium  # noqa: F401 - chromium is a fixture
from tests.helpers.view_fixtures import ROLES, write_synthetic_eval


@pytest.fixture(scope="module")
def big_eval(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    eval_dir = tmp_path_factory.mktemp("export") / "eval-big"
    return eval_dir, write_synthetic_eval(eval_dir, 1000)


@pytest.fixture(scope="module")
def big_export(big_eval: tuple[Path, list[dict]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_view(big_eval[0], tmp_path_factory.mktemp("out") / "site")


def test_export_writes_an_index_a_page_per_problem_and_image_files(big_eval: tuple[Path, list[dict]], big_export: Path) -> None:
    eval_dir, facts = big_eval
    site = big_export.parent
    assert big_export.name == "index.html"
    pages = sorted(path.name for path in (site / "problems").iterdir())
    assert pages == sorted(f"{page_key(fact['pid'])}.html" for fact in facts)
    assert (site / "files" / "problems" / "q7" / "images" / "image-1.png").read_bytes() == (eval_dir / "problems" / "q7" / "images" / "image-1.png").read_bytes()
    index = big_export.read_text()
    links = re.findall(r'<a href="([^"]+)">q\d+</a>', index)
    assert len(links) == 1000 and all((site / link).is_file() for link in links)  # relative links that resolve on disk
    assert "data:image" not in index and "http://" not in index and "https://" not in index
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', index).group(1)
    assert "img-src 'self'" in csp and "default-src 'none'" in csp and "unsafe" not in csp and "connect-src" not in csp
    problem = (site / "problems" / f"{page_key('q7')}.html").read_text()
    assert '<img src="../files/problems/q7/images/image-1.png"' in problem
    assert f'href="{page_key("q6")}.html" rel="prev"' not in problem  # links are relative to the root, not the page
    assert f'href="../problems/{page_key("q6")}.html" rel="prev"' in problem and f'href="../problems/{page_key("q8")}.html" rel="next"' in problem
    assert 'href="../index.html"' in problem and problem.count('class="card turn') == 6


def test_index_shows_models_by_name_accuracy_per_subset_and_usage_per_role(big_eval: tuple[Path, list[dict]], big_export: Path) -> None:
    _, facts = big_eval
    index = big_export.read_text()
    assert "gpt-4o (openai)" in index and "&quot;endpoint&quot;" not in index
    for subset in ("general", "math"):
        # Accuracy is correct of the scored: failed problems are counted apart, in their own column.
        mine = [fact for fact in facts if fact["subset"] == subset]
        scored = [fact for fact in mine if not fact["failed"]]
        right = sum(1 for fact in scored if fact["correct"])
        failed = len(mine) - len(scored)
        assert failed > 0
        assert f"<td>{subset}</td><td class=num>{100 * right / len(scored):.2f}% ({right}/{len(scored)})</td><td class=num>{failed}</td>" in index
    # Every problem's usage_by_role has one call per role at $0.0035.
    for role in ROLES:
        assert f"<td>{role}</td><td class=num>1,000</td><td class=num>900,000</td><td class=num>0</td><td class=num>120,000</td><td class=num>$3.5000</td>" in index


def test_costs_read_the_same_everywhere(tmp_path: Path) -> None:
    """No calls means nothing spent ($0.0000), calls without a price mean "unknown", in rows and totals alike."""
    eval_dir = tmp_path / "eval-cost"
    write_synthetic_eval(eval_dir, 3)
    lines = [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]
    lines[0]["usage"] = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": None}  # failed before any call
    lines[1]["usage"]["cost"] = None  # a model without a price
    (eval_dir / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    index = export_view(eval_dir, tmp_path / "site").read_text()
    row_costs = re.findall(r"<td class=num>(\$[\d.]+|unknown)</td><td class=num>7\.5 s</td>", index)
    assert row_costs == ["$0.0000", "unknown", f"${lines[2]['usage']['cost']:.4f}"]
    assert "<dt>cost</dt><dd>unknown</dd>" in index
    lines[1]["usage"]["cost"] = 0.01
    (eval_dir / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert f"<dt>cost</dt><dd>${0.01 + lines[2]['usage']['cost']:.4f}</dd>" in export_view(eval_dir, tmp_path / "site").read_text()


def test_export_replaces_only_its_own_folder_and_keeps_single_files_for_solves(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval-small"
    write_synthetic_eval(eval_dir, 2)
    assert write_pages(eval_dir) == eval_dir / "view" / "index.html"  # an eval's default: a folder
    (eval_dir / "view" / "index.html").write_text("edited")  # a file of ours, edited: replaced
    write_pages(eval_dir)
    assert (eval_dir / "view" / "index.html").read_text() != "edited"  # replaced whole
    (eval_dir / "view" / "problems" / "notes.html").write_text("mine")  # a file the user added: never deleted
    with pytest.raises(DataError, match=r"holds files this command did not write \(e.g. problems/notes.html\)"):
        write_pages(eval_dir)
    assert (eval_dir / "view" / "problems" / "notes.html").read_text() == "mine"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(DataError, match="already exists and is not empty"):
        export_view(eval_dir, mine)
    assert (mine / "notes.txt").read_text() == "keep me" and len(list(mine.iterdir())) == 1
    solve_dir = eval_dir / "problems" / "q1"  # a problem's folder is a solve run
    single = write_pages(solve_dir)
    assert single == solve_dir / "view.html" and "data:image/png;base64," in single.read_text()
    folder = write_pages(solve_dir, tmp_path / "solve-site")
    assert folder == tmp_path / "solve-site" / "index.html" and (tmp_path / "solve-site" / "files" / "images" / "image-1.png").is_file()
    assert write_pages(eval_dir, tmp_path / "one.html").read_text().count('<section class="problem"') == 2  # one file on request


@pytest.mark.browser
def test_browser_1000_problem_export(big_eval: tuple[Path, list[dict]], big_export: Path, chromium: Chromium) -> None:
    _, facts = big_eval
    tab = chromium.open(big_export)
    seen = tab.js("""({rows: document.querySelectorAll('#index-table tbody tr').length,
      ready: document.documentElement.getAttribute('data-ready'), count: document.getElementById('filter-count').textContent,
      bars: Object.fromEntries(Array.from(document.querySelectorAll('#feedback-histogram tr[data-target]'))
        .map(r => [r.dataset.target, [Number(r.querySelector('.count').textContent), r.querySelector('progress').value]]))})""")
    assert seen["rows"] == 1000 and seen["ready"] == "1"
    judged = [fact for fact in facts if not fact["failed"]]  # accuracy counts the scored problems only
    right = sum(1 for fact in judged if fact["correct"])
    assert seen["count"] == f"showing 1000 of 1000 ({100 * right / len(judged):.2f}% correct of {len(judged)} scored)"
    # Figure 4: each problem by its reviewer's first decision; a failed one (no review) is "no usable review".
    decided = Counter(fact["rollback"] or ("no usable review" if fact["failed"] else "none") for fact in facts)
    assert seen["bars"] == {target: [decided.get(target, 0)] * 2
                            for target in ("interpreter", "aligner", "scholar", "solver", "none", "no usable review")}
    # Rows are laid out a page (500) at a time; the button lists the rest.
    visible = "Array.from(document.querySelectorAll('#index-table tbody tr')).filter(r => r.offsetParent !== null).length"
    assert tab.js(visible) == 500 and tab.js("document.getElementById('show-more').textContent") == "show 500 more (500 not listed yet)"
    tab.js("document.getElementById('show-more').click()")
    assert tab.js(visible) == 1000 and tab.js("document.getElementById('show-more').hidden") is True
    # The histogram follows the filters.
    tab.js("document.getElementById('filter-subset').value = 'math'; document.getElementById('filter-subset').dispatchEvent(new Event('change'))")
    math = Counter(fact["rollback"] or "none" for fact in facts if fact["subset"] == "math")
    assert tab.js("Number(document.querySelector('#feedback-histogram tr[data-target=scholar] .count').textContent)") == math["scholar"]
    assert tab.console_errors() == [] and tab.js("window.__violations") == []
    problem = chromium.open(big_export.parent / "problems" / f"{page_key('q10')}.html")
    turns = problem.js("""({roles: Array.from(document.querySelectorAll('article.turn')).map(a => a.dataset.role),
      scores: document.querySelectorAll('table.scores td.score.low').length, image: document.images[0].naturalWidth,
      question: document.querySelector('.event.rollback [data-part=feedback]').textContent})""")
    assert turns == {"roles": ["user_proxy", *ROLES, "solver"], "scores": 1, "image": 64, "question": "Feedback: What about the solution?"}
    assert problem.console_errors() == [] and problem.js("window.__violations") == []


def test_a_folder_whose_marker_lists_no_files_is_never_emptied(tmp_path: Path) -> None:
    """A `.maps-view` that lists no files (an earlier version's, or one edited by hand) is no list
    of what the export wrote: the folder is refused in one line, and every file in it stays."""
    eval_dir = tmp_path / "eval-small"
    write_synthetic_eval(eval_dir, 2)
    old = eval_dir / "view"
    (old / "problems").mkdir(parents=True)
    (old / ".maps-view").write_text("written by maps view; a later export may replace this folder\n")
    for name in ("index.html", "problems/old.html"):
        (old / name).write_text("old")
    with pytest.raises(DataError, match=r"already exists and is not empty .*it is never emptied"):
        write_pages(eval_dir)
    assert (old / "problems" / "old.html").read_text() == "old" and (old / "index.html").read_text() == "old"
