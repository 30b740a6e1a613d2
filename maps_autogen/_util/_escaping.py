"""Text from outside (a served model name, a problem id, a subset, an answer, a team's step
names, a folder's path) made safe in the Markdown and CSV files we write for people to open
(`maps report`'s report.md, table1.md, table2.md, usage.md, tokens.md, table1.csv...): one
escaping function per format, and the one Markdown table and the one CSV writer built on them,
so every cell of every table goes through it.

Markdown (`markdown_text`): HTML cannot be written (`<`, `>` and `&` become entities), nor a link
or an image (`](` is broken: a picture fetched from a server of the text's choosing, a
`javascript:` link), nor a cell's end (`|`), a code span (a backtick), a new line (a heading or
an HTML block of its own) or a terminal's control sequence (`cat report.md`). CSV (`csv_value`):
a cell a spreadsheet would run as a formula (beginning with `=`, `+`, `-`, `@`, a tab or a
carriage return) gets a leading `'`, as OWASP advises; a plain number (`-3.5`) is left as it is.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

from maps_autogen._util._redact import escape_controls

_MARKDOWN = str.maketrans({"\\": "\\\\", "&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "`": "\\`",
                           "\r": " ", "\n": " "})
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?")


def markdown_text(text: Any) -> str:
    """`text` as Markdown shows it literally, in a table cell or in a sentence (see the module doc)."""
    return escape_controls(str(text).translate(_MARKDOWN).replace("](", "]\\("))


def markdown_table(header: Sequence[Any], body: Iterable[Sequence[Any]]) -> str:
    """A Markdown table, every cell escaped (`markdown_text`)."""
    def line(cells: Sequence[Any]) -> str:
        return "| " + " | ".join(markdown_text(cell) for cell in cells) + " |"

    return "\n".join([line(header), "|" + "|".join("---" for _ in header) + "|", *(line(row) for row in body)])


def csv_value(value: Any) -> Any:
    """A CSV cell: a text a spreadsheet would take for a formula gets a leading `'` (see the
    module doc); numbers, None and plain-number texts are left as they are."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START) or _PLAIN_NUMBER.fullmatch(value):
        return value
    return "'" + value


def csv_text(rows: Iterable[Sequence[Any]]) -> str:
    """CSV text (the csv module's quoting), every cell through `csv_value`."""
    out = io.StringIO()
    csv.writer(out).writerows([csv_value(cell) for cell in row] for row in rows)
    return out.getvalue()


__all__ = ["csv_text", "csv_value", "markdown_table", "markdown_text"]
