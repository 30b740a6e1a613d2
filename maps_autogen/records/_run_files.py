"""Our run files read into their `records` models and written from them: the one typed reader
of each file (the schema version checked, one line naming a missing, damaged or newer file) and
the one writer (`write_record`, through the atomic writer, secrets masked). The models
themselves are `_schema.py`'s; this module is the I/O at their edge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from maps_autogen._util import DataError, iter_jsonl, line_at, read_json_object, read_jsonl_from, write_json_atomic
from maps_autogen.records._chat_records import EventRecord, MessageRecord, TranscriptLineModel
from maps_autogen.records._schema import (
    MANIFEST_FILE,
    RUN_FILE,
    SCHEMA_VERSION,
    SUMMARY_FILE,
    TRANSCRIPT_FILE,
    Manifest,
    ResultRow,
    RunRecord,
    dumped,
)
from maps_autogen.records._summary import Summary

M = TypeVar("M", bound=BaseModel)


def parsed(model: type[M], data: Any, *, source: str) -> M:
    """`data` (read from `source`) as `model`, its schema version checked first: a file from an
    earlier or a newer maps-autogen, or one that does not match, is a one-line DataError naming
    `source` and what to do."""
    if isinstance(data, dict):
        _check_version(data["schema_version"] if "schema_version" in data else None, source)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise DataError(
            f"{source}: {_first_problem(error)}", fix="the run folder may be damaged or from another version"
        ) from None


def _check_version(version: Any, source: str) -> None:
    """Refuse a file whose schema version (the raw JSON's, not yet a record) is not this one's:
    an earlier version's file lacks what this one requires (and was written by code no release
    shipped: maps-autogen keeps no branches for it), a newer one may hold what this one cannot
    read. Every version wrote one, so a file without it is damaged or not ours. A version that
    is no whole number is left to the model, which names it."""
    if version is None:
        raise DataError(f"{source} records no schema version (every version of maps-autogen writes one): it is "
                        "damaged or was not written by maps-autogen", fix="pass a run folder written by maps-autogen")
    if _whole(version) and version < SCHEMA_VERSION:
        raise DataError(
            f"{source} was written by an earlier version of maps-autogen (schema version {version}; this one reads "
            f"version {SCHEMA_VERSION})",
            fix="run it again with this version into a new folder, or read it with the version that wrote it",
        )
    if _whole(version) and version > SCHEMA_VERSION:
        raise DataError(
            f"{source} was written by a newer maps-autogen (schema version {version}; this one reads "
            f"up to {SCHEMA_VERSION})",
            fix="upgrade maps-autogen (install a newer checkout or wheel) to read it",
        )


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or "the file"
    return f"{where}: {problem['msg'].lower()}"


def read_run(run_dir: Path) -> RunRecord:
    """A run folder's run.json as a RunRecord; one line naming the file when it is missing,
    damaged, newer or not a run."""

    path = run_dir / RUN_FILE
    data = read_json_object(
        path, missing=f"{run_dir} has no {RUN_FILE}", fix="pass a run folder written by maps solve or maps eval"
    )
    return parsed(RunRecord, data, source=str(path))


def read_manifest(eval_dir: Path, *, fix: str = "pass a folder written by maps eval or maps merge") -> Manifest:
    """An eval folder's manifest.json as a Manifest (the one reader)."""

    path = eval_dir / MANIFEST_FILE
    data = read_json_object(path, missing=f"{eval_dir} is not an eval run (no {MANIFEST_FILE})", fix=fix)
    return parsed(Manifest, data, source=str(path))


def read_summary(eval_dir: Path) -> Summary:
    """An eval folder's summary.json as a Summary."""

    path = eval_dir / SUMMARY_FILE
    data = read_json_object(
        path, missing=f"{eval_dir} has no {SUMMARY_FILE}", fix="pass a folder written by maps eval or maps merge"
    )
    return parsed(Summary, data, source=str(path))


def iter_transcript(run_dir: Path) -> Iterator[MessageRecord | EventRecord]:
    """A run's transcript lines as records, one at a time (the JSONL torn-tail rule applies:
    a line still being written is not read); a line that is not a transcript record is one
    line naming the file and its index."""

    path = run_dir / TRANSCRIPT_FILE
    for number, (_, data) in enumerate(iter_jsonl(path), start=1):
        yield parsed(TranscriptLineModel, data, source=f"{path} record {number}").root


def read_transcript(run_dir: Path) -> list[MessageRecord | EventRecord]:
    """A run's whole transcript as records (see `iter_transcript`)."""
    return list(iter_transcript(run_dir))


def read_transcript_from(
    path: Path, start: int = 0, stop: int | None = None
) -> tuple[list[MessageRecord | EventRecord], int]:
    """The transcript records on the complete lines from byte `start` (up to `stop`), and the
    offset read up to: a live feed carries on from there. A line that is not a transcript
    record is one DataError naming the file and the record."""
    lines, offset = read_jsonl_from(path, start, stop)
    return [
        parsed(
            TranscriptLineModel, line, source=f"{path} record {number + 1}" + (f" after byte {start}" if start else "")
        ).root
        for number, line in enumerate(lines)
    ], offset


def read_result_rows(path: Path, start: int = 0) -> tuple[list[ResultRow], int]:
    """results.jsonl's rows from byte `start` as ResultRows, and the offset after the last
    complete line (the JSONL torn-tail rule): a damaged or tampered row is one line naming the
    file and its line, never a crash further down and never a row dropped."""
    records, offset = read_jsonl_from(path, start)
    try:
        rows = [parsed(ResultRow, record, source=str(path)) for record in records]
    except DataError:
        raise _bad_row(path, start) from None
    return rows, offset


def iter_result_rows(path: Path) -> Iterator[tuple[int, ResultRow]]:
    """(byte offset, row) of each results.jsonl line, one line at a time, under the same rules."""
    for offset, record in iter_jsonl(path):
        try:
            row = parsed(ResultRow, record, source=str(path))
        except DataError:
            raise _bad_row(path, offset) from None
        yield offset, row


def _bad_row(path: Path, start: int) -> DataError:
    """The error for the first row from byte `start` that is not a result row, naming its line
    (counted only for that row) and its problem."""
    for offset, record in iter_jsonl(path):
        if offset < start:
            continue
        try:
            parsed(ResultRow, record, source=str(path))
        except DataError:
            problem = f" (the row of problem {record['pid']!r})" if "pid" in record else ""
            try:
                parsed(ResultRow, record, source=f"{path} line {line_at(path, offset)}{problem}")
            except DataError as error:
                return error
    return DataError(f"{path} changed while it was read", fix="try again once the run has finished writing it")


def write_record(path: Path, record: BaseModel) -> None:
    """Write one of our files from its model: the fields its writer set (and the schema
    version), atomically, secrets masked (the one atomic writer)."""
    write_json_atomic(path, dumped(record))


def write_manifest(eval_dir: Path, manifest: Manifest) -> None:
    """Write an eval folder's manifest.json from its record."""
    write_record(eval_dir / MANIFEST_FILE, manifest)
