"""Checking a benchmark's rows before the first model call.

Every row the run reads is checked: a duplicate id (results are kept per id, so one of the two
would silently never count), a missing required field, text that is not valid UTF-8. Each bad
row is reported on its own line with its line number (row number for data sets that have no
lines), and the run stops before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from maps_autogen._util import DataError
from maps_autogen.benchmarks import get_benchmark
from maps_autogen.problem import Subset, Task, rows_for
from maps_autogen.problem._rows import _has_config_entries

# Per benchmark: the id field, then the fields every row needs ("a|b": either will do;
# dotted names look inside a mapping).
ID_FIELDS = {"mathvista": "pid", "olympiadbench": "id", "emma": "pid", "custom": "id"}
REQUIRED_FIELDS = {
    "mathvista": ("pid", "question", "answer", "question_type", "answer_type", "metadata.category|category"),
    "olympiadbench": ("id", "question", "final_answer"),
    "emma": ("pid", "question", "answer", "type"),
    "custom": ("id", "question", "answer"),
}
MAX_REPORTED = 50  # a wholly wrong file would otherwise print thousands of lines


def _lookup(fields: Mapping[str, Any], dotted: str) -> Any:
    value: Any = fields
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _has_bad_text(value: Any, depth: int = 0) -> bool:
    """Whether any string in the value holds bytes that were not valid UTF-8 (read as lone
    surrogates). Depth-bounded: data set rows are shallow."""
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if depth > 8:
        return False
    if isinstance(value, Mapping):
        return any(_has_bad_text(key, depth + 1) or _has_bad_text(item, depth + 1) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_bad_text(item, depth + 1) for item in value)
    return False


def row_problems(benchmark: str, fields: Any) -> list[str]:
    """What is wrong with one row on its own (an empty list when nothing is)."""
    if not isinstance(fields, Mapping):
        return [f"is a {type(fields).__name__}, not an object"]
    problems = []
    if _has_bad_text(fields):
        problems.append("has text that is not valid UTF-8")
    for spec in REQUIRED_FIELDS[benchmark]:
        if all(_lookup(fields, name) in (None, "", [], {}) for name in spec.split("|")):
            problems.append(f"has no '{spec.split('|')[0]}'")
    # A task may check its own fields further (the custom benchmark: options, answer type, images).
    own_check = getattr(get_benchmark(benchmark).task, "row_problems", None)
    return problems + (own_check(fields) if own_check is not None and not _has_bad_text(fields) else [])


def find_bad_rows(benchmark: str, rows: Iterable[tuple[str, Any]]) -> list[str]:
    """One line per bad row: `rows` are (where, fields) pairs in reading order."""
    id_field = ID_FIELDS[benchmark]
    first_seen: dict[str, str] = {}
    lines = []
    for where, fields in rows:
        problems = row_problems(benchmark, fields)
        if isinstance(fields, Mapping) and fields.get(id_field) not in (None, ""):
            row_id = str(fields[id_field])
            if row_id in first_seen:
                problems.append(f"repeats {id_field} '{row_id}' of {first_seen[row_id]}")
            else:
                first_seen[row_id] = where
        if problems:
            lines.append(f"{where}: row {'; '.join(problems)}")
    return lines


def _sources(task: Task, subsets: Sequence[Subset], data: Path | None) -> list[str | None]:
    """The hub configs (or local entries) the run reads, each once."""
    if task.name == "mathvista" or not task.hub_id:  # one source: MathVista's split, or the user's own file
        return [None]
    if data is not None and not _has_config_entries(data, tuple(subsets)):
        return [subsets[0].source]  # one local source holds every config
    return [subset.source for subset in subsets]


def _numbered(task: Task, subsets: Sequence[Subset], data: Path | None) -> Iterable[tuple[str, Any]]:
    for config in _sources(task, subsets, data):
        rows, _ = rows_for(task.hub_id, config, task.split, data)
        origin = str(data) if data is not None else f"{task.hub_id}{f' ({config})' if config else ''}"
        for number, fields in enumerate(rows, start=1):
            line = getattr(fields, "line", None)
            yield (f"{origin} line {line}" if line is not None else f"{origin} row {number}"), fields


def validate_rows(task: Task, subsets: Sequence[Subset], data: Path | None) -> None:
    """Raise DataError with one line per bad row when any row the run would read is bad."""
    bad = find_bad_rows(task.name, _numbered(task, subsets, data))
    if not bad:
        return
    shown = bad[:MAX_REPORTED]
    if len(bad) > len(shown):
        shown.append(f"... and {len(bad) - len(shown)} more bad rows")
    raise DataError(
        "\n".join(shown), fix=f"fix or remove the {len(bad)} bad row{'s' if len(bad) > 1 else ''}; nothing was run"
    )
