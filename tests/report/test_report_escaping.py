"""Text from outside in the Markdown and CSV files `maps report` writes: a served model name
holding HTML, an image link and a cell's end reaches report.md, table1.md, table2.md,
table1_paper.md, usage.md and tokens.md escaped (its text still there, shown literally), and no
CSV cell can be taken for a formula. One escaping function per format does it
(_util/_escaping.py), for every cell and sentence."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from maps_autogen._util import csv_text, csv_value, markdown_table, markdown_text
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import Received, Reply

HOSTILE_MODEL = '<img src=x onerror=alert(1)>![](http://evil.example/p.png)|`x`'


class HostileName(ProblemScript):
    """Right answers, every reply claiming to come from a model with a hostile name."""

    def _reply(self, request: Received) -> Reply:
        reply = super()._reply(request)
        reply.model = HOSTILE_MODEL
        return reply


def test_a_hostile_served_model_name_is_escaped_in_every_markdown_and_csv_file(tmp_path: Path) -> None:
    from tests.helpers.fake_openai import FakeOpenAI

    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    answers = {pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()}
    runs = tmp_path / "runs"
    with FakeOpenAI(HostileName(answers)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        for extra in ([], ["--without", "scholar"]):
            result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(runs), "--quiet", *extra],
                              env=env, cwd=tmp_path)
            assert result.returncode == 0, result.stderr
    out = tmp_path / "report"
    report = run_maps(["report", *map(str, sorted(runs.glob("eval-*"))), "--paper", "--out", str(out)], env=clean_env(),
                      cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    markdown = {path.name: path.read_text() for path in out.glob("*.md")}
    assert {"report.md", "table1.md", "table2.md", "table1_paper.md", "usage.md", "tokens.md"} <= set(markdown)
    for name, text in markdown.items():
        for raw in ("<img", "](http", "|`x`"):
            assert raw not in text, (name, raw)
        if name == "table2_paper.md":  # OlympiadBench's ablations: these MathVista runs are not among its rows
            assert "no MAPS run on OlympiadBench" in text
            continue
        assert "&lt;img src=x onerror=alert(1)&gt;![]\\(http://evil.example/p.png)" in text, name
    for name in ("table1.csv", "table1_paper.csv"):
        for row in csv.reader(io.StringIO((out / name).read_text())):
            assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for cell in row), (name, row)
            assert not any(cell.startswith("-") and cell != "-" and not _number(cell) for cell in row), (name, row)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("text", "shown"), [
    ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("a & b", "a &amp; b"),
    ("![pixel](http://evil.example/p.png)", "![pixel]\\(http://evil.example/p.png)"),
    ("[click](javascript:alert(1))", "[click]\\(javascript:alert(1))"),
    ("a|b", "a\\|b"),
    ("line\n# heading\r\nmore", "line # heading  more"),
    ("`code`", "\\`code\\`"),
    ("back\\slash|", "back\\\\slash\\|"),
    ("\x1b[2Jclear", "\\x1b[2Jclear"),
    ("100.00 [60.97, 100.00]", "100.00 [60.97, 100.00]"),  # our own intervals read as they did
])
def test_markdown_text_shows_outside_text_literally(text: str, shown: str) -> None:
    assert markdown_text(text) == shown
    assert markdown_table(["h"], [[text]]).splitlines()[-1] == f"| {shown} |"


@pytest.mark.parametrize(("value", "written"), [
    ("=HYPERLINK(\"http://evil.example\")", "'=HYPERLINK(\"http://evil.example\")"),
    ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"),
    ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"),
    ("\rx", "'\rx"),
    ("-1.25", "-1.25"),
    ("+0.50", "+0.50"),
    (-3.5, -3.5),
    (None, None),
    ("maps (gpt-4o)", "maps (gpt-4o)"),
])
def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(value: object, written: object) -> None:
    assert csv_value(value) == written
    assert next(csv.reader(io.StringIO(csv_text([[value]])))) == ["" if written is None else str(written)]
