"""Versioned run folders: run.json (the run's summary) and transcript.jsonl (one record per
message or event), with each image stored once as a file, and turn.json while a call has been
under way a moment (`TURN_FILE_AFTER_S`)."""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
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

__all__ = ["TURN_FILE_AFTER_S", "Later", "RunWriter", "new_run_id", "request_for_transcript", "utc_now"]

#: turn.json is written once a step's call has been under way this long: a live page (which
#: looks every 0.2 s) shows who is thinking during any call it could see, and a call that ends
#: sooner costs no file (making a file costs more CPU than anything else a turn writes).
TURN_FILE_AFTER_S = 0.2


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


class Later:
    """Runs actions a fixed time after they are given, in order, on one daemon thread that lives
    only while an action is due (started by the first, ended when none is left, so it never
    outlives the run that gave them): the writes that wait to see whether they are still needed."""

    def __init__(self, delay_s: float):
        self.delay_s = delay_s
        self._due: deque[tuple[float, Callable[[], None]]] = deque()  # in the order given, so by time
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def run(self, action: Callable[[], None]) -> None:
        """Run `action` `delay_s` from now (it checks itself whether it is still wanted)."""
        with self._changed:
            self._due.append((time.monotonic() + self.delay_s, action))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="maps-later", daemon=True)
                self._thread.start()

    def _work(self) -> None:
        with self._changed:
            try:
                while self._due:
                    at, action = self._due[0]
                    wait = at - time.monotonic()
                    if wait > 0:
                        self._changed.wait(wait)  # (an action given meanwhile is due later still)
                        continue
                    self._due.popleft()
                    self._changed.release()
                    try:
                        action()
                    finally:
                        self._changed.acquire()
            finally:
                self._thread = None  # nothing due (or an action raised): the next action given starts another


_later = Later(TURN_FILE_AFTER_S)


class RunWriter:
    """Writes one run folder as the chat goes: images first, then a record per message/event.

    turn.json (the step whose call is under way, for a live page) is written by `later` once a
    call has lasted its delay, if no message has ended the turn by then; a failure to write it (a
    full disk) is raised by the writer's next record (after the last one, the live-only file is
    all it cost)."""

    def __init__(self, run_dir: Path, later: Later | None = None):
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
        self._later = later or _later
        self._turn: TurnInProgress | None = None  # the turn under way, until turn.json is written or it ends
        self._failed: BaseException | None = None  # the failure of a turn.json written in the background

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
            self._raise_failure()
            line = record.model_copy(update={"index": self._index})
            self._index += 1
            if self._transcript is None:
                raise ValueError(f"the transcript of {self.run_dir} is closed")
            text = redact(json.dumps(dumped(line), ensure_ascii=False, default=str)) + "\n"
            append_whole(self._transcript, self._path, text.encode("utf-8"))
            if isinstance(line, MessageRecord):
                self._messages += 1
                self._turn = None  # the turn ended: its turn.json, if not written yet, never will be

    def write_run(self, run: RunRecord) -> Path:
        """Write run.json from its record."""
        path = self.run_dir / RUN_FILE
        write_record(path, run)
        return path

    def start_turn(self, record: TurnStartRecord) -> None:
        """A step's call starts: turn.json says so (a live page shows it) once the call has been
        under way for the delay of `later` (TURN_FILE_AFTER_S)."""
        with self._lock:
            self._raise_failure()
            turn = TurnInProgress(role=record.role, agent=record.agent, round=record.round, revision=record.revision,
                                  started_at=utc_now(), messages=self._messages)
            self._turn = turn
        self._later.run(lambda: self._write_turn(turn))

    def _write_turn(self, turn: TurnInProgress) -> None:
        """Write turn.json for `turn` if it is still under way (no message has ended it, no
        other turn has started, the writer is open)."""
        with self._lock:
            if self._turn is not turn or self._transcript is None:
                return
            self._turn = None
            try:
                write_record(self.run_dir / TURN_FILE, turn)
            except Exception as error:  # noqa: BLE001 - raised in the chat's own thread, by its next record
                self._failed = error

    def _raise_failure(self) -> None:
        if self._failed is not None:
            failed, self._failed = self._failed, None
            raise failed

    def close(self) -> None:
        with self._lock:
            self._turn = None
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

