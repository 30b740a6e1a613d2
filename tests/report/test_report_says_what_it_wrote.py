"""What `maps report` and the viewer say, as a first afternoon reads them: the report lists every
file it wrote (and what each holds); `--paper` on a benchmark the paper does not report shows no
empty paper rows; the viewer's Figure 4 names its bars as the figure and the docs do ("no
regeneration", "no usable review"), never a bare "none"; a run's stop banner gives the answer's
option letter with its text."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.common import REPO, TEST_KEY, clean_env, run_maps
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.readme_commands import fake_service

BENCH = REPO / "examples" / "bench.jsonl"


def test_report_lists_every_file_it_wrote_and_no_empty_paper_rows(tmp_path: Path) -> None:
    with FakeOpenAI(fake_service()) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        ran = run_maps(["eval", "custom", "--data", str(BENCH), "--runs-dir", str(tmp_path / "runs"), "--quiet"],
                       env=env, cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr
        (eval_dir,) = (tmp_path / "runs").glob("eval-*")
        out = tmp_path / "report"
        report = run_maps(["report", str(eval_dir), "--out", str(out), "--paper"], env=env, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("wrote "))
    # every file, each once; but the folder's marker (`.maps-report`: ours, and what it holds) is not a result
    written = sorted(path.name for path in out.iterdir() if path.name != ".maps-report")
    assert lines[start] == f"wrote {len(written)} files in {out}:"
    listed = [line.split()[0] for line in lines[start + 1:] if line.startswith("  ")]
    assert sorted(listed) == written
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines[start + 1:] if line.startswith("  "))  # and what it holds
    paper = (out / "table1_paper.md").read_text()
    assert "| paper (" not in paper  # the paper reports no custom benchmark: none of its 15 rows
    assert "the paper: none of its rows reports Custom, so none is shown" in paper
    assert "| this report | maps (gpt-4o) |" in paper

    # the viewer's Figure 4 bars, named as the figure names them
    page_dir = tmp_path / "view"
    viewed = run_maps(["view", str(eval_dir), "--out", str(page_dir)], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr
    index = (page_dir / "index.html").read_text()
    histogram = index[index.index('id="feedback-histogram"'):]
    histogram = histogram[: histogram.index("</table>")]
    names = re.findall(r'<tr data-target="([^"]+)"><td>([^<]+)</td>', histogram)
    assert ("none", "no regeneration") in names
    assert all(name != "none" for _, name in names)


def test_the_stop_banner_gives_the_option_letter_with_its_text(tmp_path: Path) -> None:
    with FakeOpenAI(fake_service()) as server:  # the Solver answers A, the lever's "1 kg"
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        solved = run_maps(["solve", "--problem", str(REPO / "examples" / "lever" / "problem.yaml"), "--runs-dir",
                           str(tmp_path / "runs")], env=env, cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    viewed = run_maps(["view", str(run_dir), "--out", str(tmp_path / "page.html")], env=clean_env(), cwd=tmp_path)
    assert viewed.returncode == 0, viewed.stderr
    page = (tmp_path / "page.html").read_text()
    banner = re.search(r'data-event="stop"[^>]*>(.*?)</div>', page)
    assert banner is not None and "final answer: A. 1 kg" in banner.group(1)
