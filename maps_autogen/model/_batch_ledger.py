"""`maps eval --batch`'s ledger: the eval folder's batches (records/_batch_records.py) read back,
what each request gets, and the records written as its batches move on.

A request is known by its key: a hash of the service, the path its batch line names and its
body. Its `custom_id` is `<step>-<key>-<n>`: the n-th time the eval sent that same request (a
retry sends it again; two problems may ask the same). A resumed eval's chats ask again, in
order, what they asked before they stopped; each ask of a key takes the first of that key's
custom ids this invocation has not taken yet that either has a reply (the answer is read back:
nothing is sent) or waits in a batch still running at the service (the ask waits for it too).
Only when there is none is a new custom id made and the request sent. An error a batch answered
in an earlier invocation is not read back: the request is sent again, as a resumed eval retries
a failed problem."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from maps_autogen._util import iter_jsonl, read_json_object, write_text_atomic
from maps_autogen.records import (
    BATCHES_DIR,
    ENDED,
    BatchAnswer,
    BatchRecord,
    answers_path,
    dumped,
    parsed,
    record_path,
    write_record,
)

KEY_CHARS = 24  # hex digits of a request's key (96 bits)
_ROLE = re.compile(r"[^a-z0-9_]+")
_RECORD_NAME = re.compile(r"batch-(\d{4,})\.json")


def request_key(service: str, line_url: str, body: dict[str, Any]) -> str:
    """The key of a request: its service, the path its line names and its whole body."""
    text = json.dumps({"service": service, "url": line_url, "body": body}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:KEY_CHARS]


def make_custom_id(role: str, key: str, number: int) -> str:
    """`<step>-<key>-<n>`: the step (so a line can be told by who asked), the key, the count."""
    return f"{_ROLE.sub('_', role.lower())[:32] or 'call'}-{key}-{number}"


def key_of(custom_id: str) -> str | None:
    """The request key a custom id of ours carries (None: not one of ours)."""
    parts = custom_id.rsplit("-", 2)
    return parts[1] if len(parts) == 3 and len(parts[1]) == KEY_CHARS else None


@dataclass(frozen=True)
class Claim:
    """What an ask of a request gets: an answer already received (`answered`), a place in a
    batch still running (`waiting`, in record `number`), or a new custom id to send (`new`)."""

    kind: Literal["answered", "waiting", "new"]
    custom_id: str
    number: int | None = None  # the record of the batch it was (or is being) answered in
    answer: BatchAnswer | None = None


class Ledger:
    """The batches of one eval folder (`<eval>/batches/`): read once, then kept as they move on.
    Not thread-safe: its owner (the broker) holds its lock around every call."""

    def __init__(self, eval_dir: Path):
        self.folder = eval_dir / BATCHES_DIR
        self.records: dict[int, BatchRecord] = {}
        self.answers: dict[str, tuple[BatchAnswer, int]] = {}  # custom id -> (answer, record number)
        self._sent: dict[str, list[str]] = {}  # key -> its custom ids, in the order they were made
        self._carried_by: dict[str, int] = {}  # custom id -> the record carrying it
        self._made: set[str] = set()  # every custom id of `_sent`
        self._claimed: set[str] = set()  # taken by an ask of this invocation
        self.replayed = 0  # asks of this invocation answered from earlier invocations' batches
        if self.folder.is_dir():
            for path in sorted(self.folder.glob("batch-*.json")):
                if _RECORD_NAME.fullmatch(path.name):
                    record = parsed(BatchRecord, read_json_object(path, missing=str(path), fix="resume without it"),
                                    source=str(path))
                    self._add(record)
                    if record.answers_read:
                        self._read_answers(record.number)

    def _add(self, record: BatchRecord) -> None:
        self.records[record.number] = record
        for custom_id in record.custom_ids:
            key = key_of(custom_id)
            if key is not None and custom_id not in self._made:
                self._sent.setdefault(key, []).append(custom_id)
                self._made.add(custom_id)
            self._carried_by[custom_id] = record.number

    def _read_answers(self, number: int) -> None:
        path = answers_path(self.folder, number)
        if not path.is_file():
            return
        for _, line in iter_jsonl(path):
            answer = parsed(BatchAnswer, line, source=str(path))
            self.answers[answer.custom_id] = (answer, number)

    # ----- asks ---------------------------------------------------------------------------
    def claim(self, role: str, key: str) -> Claim:
        """What this ask of request `key` gets (see the module doc); a `new` custom id is
        reserved at once, so two asks of one request never share it."""
        for custom_id in self._sent.get(key, []):
            if custom_id in self._claimed:
                continue
            number = self._carried_by.get(custom_id)
            found = self.answers.get(custom_id)
            if found is not None and found[0].status_code == 200:
                self._claimed.add(custom_id)
                self.replayed += 1
                return Claim("answered", custom_id, found[1], found[0])
            if found is None and number is not None and self.running(self.records[number]):
                self._claimed.add(custom_id)
                return Claim("waiting", custom_id, number)
        return Claim("new", self.new_id(role, key))

    def has_reply(self, key: str) -> bool:
        """Whether an ask of request `key` now would be answered from an earlier batch."""
        return any(custom_id not in self._claimed and custom_id in self.answers
                   and self.answers[custom_id][0].status_code == 200 for custom_id in self._sent.get(key, []))

    def new_id(self, role: str, key: str) -> str:
        """A custom id for sending request `key` once more (reserved: claimed by the asker)."""
        ids = self._sent.setdefault(key, [])
        custom_id = make_custom_id(role, key, len(ids))
        ids.append(custom_id)
        self._made.add(custom_id)
        self._claimed.add(custom_id)
        return custom_id

    @staticmethod
    def running(record: BatchRecord) -> bool:
        """Whether a batch's answers are still to come: created at the service and either not
        ended or ended with its files not read yet."""
        return record.batch_id is not None and (record.status not in ENDED or not record.answers_read)

    # ----- records ------------------------------------------------------------------------
    def next_number(self) -> int:
        return max(self.records, default=0) + 1

    def next_round(self) -> int:
        return max((record.round for record in self.records.values()), default=0) + 1

    def write(self, record: BatchRecord) -> BatchRecord:
        """Keep and write a batch's record (the one writer: atomic, secrets masked)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_record(record_path(self.folder, record.number), record)
        self._add(record)
        return record

    def store_answers(self, number: int, answers: list[BatchAnswer]) -> None:
        """Write batch `number`'s answers (before its record says they are read) and keep them."""
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(answers_path(self.folder, number),
                          "".join(json.dumps(dumped(answer), ensure_ascii=False) + "\n" for answer in answers))
        for answer in answers:
            self.answers[answer.custom_id] = (answer, number)


def read_batch_records(eval_dir: Path) -> tuple[list[BatchRecord], int]:
    """An eval folder's batch records, in order (none for an eval that sent none), and how many
    requests their output and error files answered with a response."""
    if not (eval_dir / BATCHES_DIR).is_dir():
        return [], 0
    ledger = Ledger(eval_dir)
    return list(ledger.records.values()), sum(1 for answer, _ in ledger.answers.values()
                                              if answer.status_code is not None)
