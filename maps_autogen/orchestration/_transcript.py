"""Versioned run folders: run.json (the run's summary) and transcript.jsonl (one record per
message or event), with each image stored once as a file."""

from __future__ import annotations

import json
import os
import secrets
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from maps_autogen._util import DataError, append_whole, open_append, redact, write_bytes_file
from maps_autogen.problem import Problem
from maps_autogen.records import (
    IMAGES_DIR,
    RUN_FILE,
    TRANSCRIPT_FILE,
    TURN_FILE,
    ChatRecord,
    EventRecord,
    MessageRecord,
    RunRecord,
    TurnInProgress,
    TurnStartRecord,
    dumped,
    write_record,
)

__all__ = ["RunWriter", "new_run_id", "request_for_transcript", "utc_now"]


def new_run_id(kind: str = "solve") -> str:
    """A sortable, unique run id: kind-YYYYmmdd-HHMMSS-xxxxxx."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{kind}-{stamp}-{secrets.token_hex(3)}"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def request_for_transcript(messages: list[dict[str, Any]], image_files: dict[str, str]) -> list[dict[str, Any]]:
    """A request as the transcript stores it: image data replaced by the stored file's name
    (`image_files` maps each data URL to its file), so images are stored once."""
    cleaned = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [
                {"type": "image_file", "file": image_files.get(part.get("image_url", {}).get("url", ""), "(image)")}
                if part.get("type") == "image_url" else part
                for part in content
            ]
        cleaned.append({"role": message.get("role"), "content": content})
    return cleaned


class RunWriter:
    """Writes one run folder as the chat goes: images first, then a record per message/event."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise DataError(
                f"cannot create run folder {run_dir}: {error.strerror or error}", fix="choose another --runs-dir"
            ) from None
        self._lock = threading.Lock()
        self._path = run_dir / TRANSCRIPT_FILE
        self._transcript: int | None = open_append(self._path)
        self._index = 0
        self._messages = 0  # message lines written (a turn in progress ends at the next one)

    def save_images(self, problem: Problem) -> list[str]:
        """Store each image once; returns the file paths relative to the run folder."""
        files = []
        for number, image in enumerate(problem.images, start=1):
            relative = f"{IMAGES_DIR}/image-{number}.{image.extension}"
            target = self.run_dir / relative
            write_bytes_file(target, image.data)
            files.append(relative)
        return files

    def append(self, record: MessageRecord | EventRecord) -> None:
        """Append one record as a complete line, numbered (`index`) in the order written, at
        once: a crash loses no finished record, and a full disk leaves no torn line (a
        DiskFullError)."""
        with self._lock:
            line = record.model_copy(update={"index": self._index})
            self._index += 1
            if self._transcript is None:
                raise ValueError(f"the transcript of {self.run_dir} is closed")
            text = redact(json.dumps(dumped(line), ensure_ascii=False, default=str)) + "\n"
            append_whole(self._transcript, self._path, text.encode("utf-8"))
            if isinstance(line, MessageRecord):
                self._messages += 1

    def write_run(self, run: RunRecord) -> Path:
        """Write run.json from its record."""
        path = self.run_dir / RUN_FILE
        write_record(path, run)
        return path

    def start_turn(self, record: TurnStartRecord) -> None:
        """Write turn.json: the step whose call is now under way (a live page shows it)."""
        with self._lock:
            turn = TurnInProgress(role=record.role, agent=record.agent, round=record.round, revision=record.revision,
                                  started_at=utc_now(), messages=self._messages)
            write_record(self.run_dir / TURN_FILE, turn)

    def close(self) -> None:
        with self._lock:
            if self._transcript is not None:
                os.close(self._transcript)
                self._transcript = None
            (self.run_dir / TURN_FILE).unlink(missing_ok=True)  # no call is under way any more

    # The writer is also a chat observer: it keeps messages and events, not live tokens, and the
    # turn under way.
    def emit(self, record: ChatRecord) -> None:
        if isinstance(record, (MessageRecord, EventRecord)):
            self.append(record)
        elif isinstance(record, TurnStartRecord):
            self.start_turn(record)

