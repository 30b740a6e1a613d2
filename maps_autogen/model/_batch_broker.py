"""`maps eval --batch`'s rounds: every chat's blocking call handed to one broker, which sends the
calls of all the problems in flight as one round of batches and answers each call when its
batch has ended.

A round is sent when every problem in flight waits on a call (or has finished): the runner says
how many are in flight (`set_running`). Its requests are grouped by service and model (a batch
file holds one model's requests) and split where the service's limits on requests or bytes per
file require (`batch_max_requests`, `batch_max_bytes`). For each batch, its record is written
before the input file is uploaded, again with the file's id before the batch is created, and
again with the batch's id before the wait begins (records/_batch_records.py): a run stopped at
any point leaves the batch running at the service and its id in the eval folder, and a resumed
eval picks it up (model/_batch_ledger.py says how a resumed chat's calls find their answers).

Each running batch is looked at after a second, then after twice as long each time, up to the
endpoint's `batch_poll_s`. When it ends, its output and error files are read into the eval folder
and each call gets its line, which the backend reads as the same reply received live
(model/_batch_backend.py). A request the batch did not run (it expired, failed or was cancelled
by someone) is sent again in the next round, at most `MAX_RESENDS` times (the summary counts them).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from maps_autogen._util import FatalServiceError, MapsError, RunInterrupted, ServiceError, body_limit
from maps_autogen.model._batch_api import BatchService, BatchState, Unreachable
from maps_autogen.model._batch_ledger import Ledger, request_key
from maps_autogen.model._client import shared_http_client
from maps_autogen.records import BatchAnswer, BatchRecord
from maps_autogen.settings import ResolvedModel

logger = logging.getLogger(__name__)

MAX_RESENDS = 2  # times a request its batch did not run is sent again
FIRST_POLL_S = 1.0  # the first look at a new batch (then twice as long each time, up to batch_poll_s)
CHECK_S = 0.5  # how often the broker looks for a cancelled run while it has nothing due
NOT_RUN = ("batch_expired", "batch_cancelled")  # an error line of a request the batch never ran
# A failed batch's error code → the status its requests are answered with (as a live reply's).
_FAILED_STATUS = (("api_key", 401), ("auth", 401), ("permission", 403), ("not_found", 404), ("model", 404),
                  ("rate_limit", 429), ("quota", 429), ("token_limit", 429), ("limit_exceeded", 429))


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(eq=False)
class Group:
    """One service and model: what one batch file holds."""

    service: BatchService
    model: ResolvedModel
    line_model: str


@dataclass(eq=False)
class _Ticket:
    """One waiting call."""

    custom_id: str
    key: str
    role: str
    group: Group
    body: dict[str, Any]
    resends: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    answer: BatchAnswer | None = None
    batch: str | None = None
    error: BaseException | None = None

    def line(self) -> bytes:
        return (json.dumps({"custom_id": self.custom_id, "method": "POST", "url": self.group.service.line_url,
                            "body": self.body}, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")


@dataclass(eq=False)
class _Flight:
    """A batch at the service this invocation waits on (or picked up from an earlier one)."""

    record: BatchRecord
    group: Group
    tickets: dict[str, _Ticket]
    next_poll: float
    delay: float
    seen: float  # when its wait was last counted (monotonic)


class BatchBroker:
    """The rounds of one eval invocation (see the module doc). `cancel` is the team's: once set
    (Ctrl-C, SIGTERM, a fatal error), every waiting call ends as interrupted and nothing more is
    sent; the batches already sent run on at the service for a --resume."""

    def __init__(self, eval_dir: Path, *, cancel: threading.Event, max_reply_bytes: int,
                 on_status: Callable[[str], None] | None = None):
        self._ledger = Ledger(eval_dir)
        self._eval_id = eval_dir.name
        self._cancel = cancel
        self._line_bytes = body_limit(max_reply_bytes) + 64 * 1024
        self._on_status = on_status
        self._cond = threading.Condition()
        self._groups: dict[tuple[Any, ...], Group] = {}
        self._pending: list[_Ticket] = []
        self._flights: dict[int, _Flight] = {}
        self._waiting = 0  # calls waiting (pending, or in a batch)
        self._running = 0  # problems in flight (the runner says)
        self._stopping = False
        self._ended: BaseException | None = None  # set once the broker's thread has ended
        self._shown: list[_Flight] = []  # the batches the progress line describes when none runs
        self._thread = threading.Thread(target=self._work, name="maps-batch", daemon=True)

    # ----- set-up -------------------------------------------------------------------------
    def group_for(self, model: ResolvedModel) -> Group:
        """The group of a backend's model: one per service (URL, key, headers, query) and model."""
        key = (model.endpoint_name, model.base_url, model.api_type, model.api_version, model.model,
               model.azure_deployment, tuple(sorted(model.headers.items())), tuple(sorted(model.query.items())))
        with self._cond:
            if key not in self._groups:
                # A gateway that routes by model (LiteLLM's proxy) learns it from this header.
                service = BatchService(model, shared_http_client(model.timeout_s), self._cancel,
                                       extra_headers={"x-litellm-model": model.model})
                self._groups[key] = Group(service, model, service.line_model())
            return self._groups[key]

    def probe(self) -> None:
        """Every service's batch API answers (before any call): a 404 is one line naming it."""
        seen: set[str] = set()
        for group in list(self._groups.values()):
            if group.service.shown not in seen:
                seen.add(group.service.shown)
                group.service.probe()

    def start(self) -> list[str]:
        """Pick up the batches earlier invocations left (found again when only their input
        file's id was written down), then start the broker; lines saying what was picked up."""
        notes: list[str] = []
        for record in list(self._ledger.records.values()):
            group = self._group_of(record)
            if record.status == "uploading":  # killed before its file was uploaded: never sent
                self._ledger.write(record.model_copy(update={"status": "abandoned"}))
                continue
            if record.status == "uploaded" and group is not None and record.input_file_id is not None:
                state = group.service.find(record.input_file_id)
                record = self._ledger.write(record.model_copy(update=(
                    {"status": "abandoned"} if state is None else self._state_fields(state, submitted=True))))
            if not Ledger.running(record):
                continue
            if group is None:
                notes.append(f"batch {record.batch_id} ({record.endpoint}, {record.model}) is not picked up: no step "
                             "of this run sends to that endpoint and model")
                continue
            self._flights[record.number] = _Flight(record, group, {}, time.monotonic(), _first_poll(group),
                                                   time.monotonic())
        if self._flights:
            requests = sum(len(flight.record.custom_ids) for flight in self._flights.values())
            notes.append(f"picked up {len(self._flights)} batch(es) still at the service ({requests} requests): "
                         "nothing they carry is sent again")
        self._thread.start()
        return notes

    def _group_of(self, record: BatchRecord) -> Group | None:
        return next((group for group in self._groups.values()
                     if group.model.endpoint_name == record.endpoint and group.line_model == record.model), None)

    # ----- what the runner and the backends call ------------------------------------------
    def set_running(self, count: int) -> None:
        """How many problems are in flight: a round is sent once that many calls wait."""
        with self._cond:
            self._running = count
            self._cond.notify_all()

    def holds(self, group: Group, body: dict[str, Any]) -> bool:
        """Whether a reply to this request came in an earlier invocation's batch (it is read
        back from there, never from the response cache, so its cost is counted once)."""
        key = request_key(group.service.shown, group.service.line_url, body)
        with self._cond:
            return self._ledger.has_reply(key)

    def ask(self, group: Group, body: dict[str, Any], role: str) -> tuple[BatchAnswer, str | None]:
        """The answer to one call (and the id of the batch it came in), once its batch has
        ended; raises as the run ends (interrupted) or the broker fails."""
        key = request_key(group.service.shown, group.service.line_url, body)
        with self._cond:
            if self._ended is not None or self._cancel.is_set():
                raise self._ended or RunInterrupted("the run was interrupted")
            claim = self._ledger.claim(role, key)
            if claim.kind == "answered":
                assert claim.answer is not None and claim.number is not None
                return claim.answer, self._ledger.records[claim.number].batch_id
            flight = self._flights.get(claim.number) if claim.kind == "waiting" and claim.number else None
            custom_id = claim.custom_id
            if claim.kind == "waiting" and flight is None:  # its batch is not this run's to pick up
                custom_id = self._ledger.new_id(role, key)
            ticket = _Ticket(custom_id, key, role, group, body)
            if flight is not None:
                flight.tickets[ticket.custom_id] = ticket
            else:
                self._pending.append(ticket)
            self._waiting += 1
            self._cond.notify_all()
        ticket.done.wait()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.answer is not None
        return ticket.answer, ticket.batch

    def close(self) -> None:
        """Stop the broker (the batches sent run on at the service); their waits recorded."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        with self._cond:
            for flight in self._flights.values():
                self._count_wait(flight)
                self._ledger.write(flight.record)

    def notes(self) -> list[str]:
        """What the summary's reader should know of this invocation's batches."""
        notes = []
        if self._ledger.replayed:
            notes.append(f"{self._ledger.replayed} call(s) were answered by batches sent before the resume (nothing "
                         "sent again)")
        waiting = [record for record in self._ledger.records.values() if Ledger.running(record)]
        if waiting:
            notes.append(f"{len(waiting)} batch(es) still run at the service; --resume picks them up")
        return notes

    # ----- the broker's thread --------------------------------------------------------------
    def _work(self) -> None:
        try:
            while True:
                with self._cond:
                    sending: list[_Ticket] = []
                    while True:
                        if self._stopping:
                            self._end(RunInterrupted("the run was interrupted"))
                            return
                        if self._cancel.is_set():
                            self._end(RunInterrupted("the run was interrupted"))
                            return
                        if self._pending and self._waiting >= self._running:
                            sending, self._pending = self._pending, []
                            break
                        due = min((flight.next_poll for flight in self._flights.values()), default=None)
                        left = None if due is None else due - time.monotonic()
                        if left is not None and left <= 0:
                            break
                        self._cond.wait(timeout=CHECK_S if left is None else min(CHECK_S, left))
                if sending:
                    self._send_round(sending)
                self._poll_due()
        except BaseException as error:  # no chat may be left waiting on a broker that died
            logger.exception("the batch broker failed")
            with self._cond:
                self._end(error if isinstance(error, MapsError) else ServiceError(
                    f"the batch broker failed: {error.__class__.__name__}: {error}",
                    fix="see the log above; --resume picks up the batches already sent"))

    def _end(self, error: BaseException) -> None:
        """Every waiting call ends with `error` (hold the lock)."""
        self._ended = error
        for ticket in [*self._pending, *(t for flight in self._flights.values() for t in flight.tickets.values())]:
            self._deliver(ticket, error=error)
        self._pending = []
        for flight in self._flights.values():
            flight.tickets = {}

    def _deliver(self, ticket: _Ticket, *, answer: BatchAnswer | None = None, batch: str | None = None,
                 error: BaseException | None = None) -> None:
        if ticket.done.is_set():
            return
        ticket.answer, ticket.batch, ticket.error = answer, batch, error
        self._waiting -= 1
        ticket.done.set()

    def _send_round(self, tickets: list[_Ticket]) -> None:
        """One round: each group's tickets in as few batches as its limits allow."""
        with self._cond:
            number = self._ledger.next_round()
        by_group: dict[int, list[_Ticket]] = {}
        for ticket in tickets:
            by_group.setdefault(id(ticket.group), []).append(ticket)
        for group_tickets in by_group.values():
            for part, lines in self._split(group_tickets):
                self._submit(number, part, lines)
        self._say()

    def _split(self, tickets: list[_Ticket]) -> list[tuple[list[_Ticket], list[bytes]]]:
        """The tickets in parts within the service's limits on one input file."""
        model = tickets[0].group.model
        parts: list[tuple[list[_Ticket], list[bytes]]] = []
        size = 0
        for ticket in tickets:
            line = ticket.line()
            if len(line) > model.batch_max_bytes:
                with self._cond:
                    self._deliver(ticket, error=ServiceError(
                        f"a {ticket.role} request is {len(line):,} bytes, over the batch input file limit of "
                        f"endpoint '{model.endpoint_name}' ({model.batch_max_bytes:,} bytes, batch_max_bytes)",
                        fix="raise batch_max_bytes in agents.yaml if the service takes larger files, or run "
                            "this problem without --batch"))
                continue
            if not parts or len(parts[-1][0]) >= model.batch_max_requests or size + len(line) > model.batch_max_bytes:
                parts.append(([], []))
                size = 0
            parts[-1][0].append(ticket)
            parts[-1][1].append(line)
            size += len(line)
        return parts

    def _submit(self, round_number: int, tickets: list[_Ticket], lines: list[bytes]) -> None:
        """Write the record, upload, write the file id, create, write the batch id: then wait."""
        group = tickets[0].group
        data = b"".join(lines)
        with self._cond:
            record = self._ledger.write(BatchRecord(
                number=self._ledger.next_number(), round=round_number, endpoint=group.model.endpoint_name,
                model=group.line_model, service=group.service.shown, custom_ids=[t.custom_id for t in tickets],
                resent=sum(1 for t in tickets if t.resends), input_bytes=len(data)))
        try:
            file_id = group.service.upload(data, f"maps-{self._eval_id}-batch-{record.number:04d}.jsonl")
            with self._cond:
                record = self._ledger.write(record.model_copy(update={"input_file_id": file_id, "status": "uploaded"}))
            state = group.service.create(file_id, {"maps_eval": self._eval_id[:500],
                                                   "maps_batch": str(record.number)})
        except MapsError as error:
            with self._cond:
                # Its creation may have reached the service when no answer came back (or the run was
                # stopped meanwhile): left `uploaded`, a resume looks for it in the service's list.
                # Otherwise it was never created: its requests were not sent.
                if not (record.status == "uploaded" and isinstance(error, (Unreachable, RunInterrupted))):
                    self._ledger.write(record.model_copy(update={"status": "abandoned"}))
                for ticket in tickets:
                    self._deliver(ticket, error=error)
            return
        with self._cond:
            record = self._ledger.write(record.model_copy(update=self._state_fields(state, submitted=True)))
            now = time.monotonic()
            first = _first_poll(group)
            flight = _Flight(record, group, {t.custom_id: t for t in tickets}, now + first, first, now)
            self._flights[record.number] = flight
            if state.status in ("completed", "failed", "expired", "cancelled"):
                flight.next_poll = now

    @staticmethod
    def _state_fields(state: BatchState, *, submitted: bool = False) -> dict[str, Any]:
        fields: dict[str, Any] = {"batch_id": state.id, "status": state.status, "counts": state.counts,
                                  "output_file_id": state.output_file_id, "error_file_id": state.error_file_id}
        if submitted:
            fields["submitted_at"] = now_iso()
        if state.errors:
            fields["errors"] = [f"{code}: {message}" + (f" (line {line})" if line else "")
                                for code, message, line in state.errors]
        return fields

    def _poll_due(self) -> None:
        now = time.monotonic()
        with self._cond:
            due = [flight for flight in self._flights.values() if flight.next_poll <= now]
        for flight in due:
            record = flight.record
            assert record.batch_id is not None
            try:
                state = flight.group.service.retrieve(record.batch_id)
            except RunInterrupted:
                return
            except Unreachable as error:  # the batch runs on at the service: look again later
                logger.warning("could not look at batch %s: %s", record.batch_id, error)
                flight.next_poll = time.monotonic() + flight.group.model.batch_poll_s
                continue
            except FatalServiceError as error:
                with self._cond:
                    for ticket in flight.tickets.values():
                        self._deliver(ticket, error=error)
                    flight.tickets = {}
                    flight.next_poll = time.monotonic() + flight.group.model.batch_poll_s
                continue
            except ServiceError as error:  # the batch runs on at the service: look again later
                logger.warning("could not look at batch %s: %s", record.batch_id, error)
                flight.next_poll = time.monotonic() + flight.group.model.batch_poll_s
                continue
            with self._cond:
                self._count_wait(flight)
                changed = (state.status, state.counts) != (record.status, record.counts)
                if changed and state.status not in ("completed", "failed", "expired", "cancelled"):
                    flight.record = self._ledger.write(record.model_copy(update=self._state_fields(state)))
            if state.status in ("completed", "failed", "expired", "cancelled"):
                self._finish(flight, state)
            else:
                flight.delay = min(flight.delay * 2, flight.group.model.batch_poll_s)
                flight.next_poll = time.monotonic() + flight.delay
        if due:
            self._say()

    def _count_wait(self, flight: _Flight) -> None:
        now = time.monotonic()
        flight.record = flight.record.model_copy(update={"waited_s": round(flight.record.waited_s + now - flight.seen,
                                                                            3)})
        flight.seen = now

    def _finish(self, flight: _Flight, state: BatchState) -> None:
        """An ended batch: its answers read and kept, each waiting call answered or sent again."""
        service = flight.group.service
        answers: dict[str, BatchAnswer] = {}
        try:
            for file_id in (state.output_file_id, state.error_file_id):
                if file_id:
                    for answer in service.answers(file_id, self._line_bytes):
                        answers[answer.custom_id] = answer
        except RunInterrupted:
            return
        except ServiceError as error:
            logger.warning("could not read the results of batch %s: %s", state.id, error)
            flight.next_poll = time.monotonic() + flight.group.model.batch_poll_s
            return
        carried = flight.record.custom_ids
        if state.status == "failed":
            for custom_id in _failed_lines(state, carried):
                answers.setdefault(custom_id, _failed_answer(custom_id, state))
        with self._cond:
            kept = [answers[custom_id] for custom_id in carried if custom_id in answers]
            self._ledger.store_answers(flight.record.number, kept)
            fields = {**self._state_fields(state), "ended_at": now_iso(), "answers_read": True}
            flight.record = self._ledger.write(flight.record.model_copy(update=fields))
            del self._flights[flight.record.number]
            # shown as the last round's state until the next one goes
            self._shown = [*(f for f in self._shown if f.record.round == flight.record.round), flight]
            for custom_id, ticket in flight.tickets.items():
                got = answers.get(custom_id)
                if got is None or (got.status_code is None and got.error_code in NOT_RUN):
                    self._again(ticket, state)
                else:
                    self._deliver(ticket, answer=got, batch=state.id)
            self._cond.notify_all()
        if state.status != "completed":
            logger.warning("batch %s %s: its requests it did not run are sent again (at most %d times)", state.id,
                           state.status, MAX_RESENDS)

    def _again(self, ticket: _Ticket, state: BatchState) -> None:
        """A call its batch did not run: sent in the next round, or after MAX_RESENDS an error."""
        if ticket.resends >= MAX_RESENDS:
            self._deliver(ticket, error=ServiceError(
                f"batch {state.id} {state.status} without running a {ticket.role} request, which was sent "
                f"{ticket.resends + 1} times", fix="check the service's batch queue and limits; --resume sends it "
                "again"))
            return
        ticket.resends += 1
        ticket.custom_id = self._ledger.new_id(ticket.role, ticket.key)
        self._pending.append(ticket)

    def _say(self) -> None:
        """The progress line: the round, each batch's own counts, how long it has waited."""
        if self._on_status is None:
            return
        with self._cond:
            flights = list(self._flights.values()) or self._shown
            if not flights:
                return
            rounds = sorted({flight.record.round for flight in flights})
            total = sum(flight.record.counts.total if flight.record.counts else len(flight.record.custom_ids)
                        for flight in flights)
            completed = sum(flight.record.counts.completed for flight in flights if flight.record.counts)
            failed = sum(flight.record.counts.failed for flight in flights if flight.record.counts)
            statuses = sorted({flight.record.status for flight in flights})
            waited = max(flight.record.waited_s for flight in flights)
        self._on_status(f"round {', '.join(map(str, rounds))}: {len(flights)} batch(es) {'/'.join(statuses)}, "
                        f"{completed}/{total} done, {failed} failed, waited {_duration(waited)}")


def _first_poll(group: Group) -> float:
    return min(FIRST_POLL_S, group.model.batch_poll_s)


def _failed_lines(state: BatchState, carried: list[str]) -> list[str]:
    """The requests a failed batch's errors name by line, or all of them when none is named."""
    named = [carried[line - 1] for _, _, line in state.errors if line is not None and 1 <= line <= len(carried)]
    return named or list(carried)


def _failed_answer(custom_id: str, state: BatchState) -> BatchAnswer:
    """A request of a failed batch, answered as the same failure received live: its error code
    read as the status a live reply would have had (a refused key 401, an unknown model 404, a
    limit 429, anything else 400 with the service's message)."""
    code, message = next(((c, m) for c, m, _ in state.errors), ("batch_failed", "the batch failed"))
    status = next((number for word, number in _FAILED_STATUS if word in code.lower()), 400)
    return BatchAnswer(custom_id=custom_id, status_code=status,
                       body={"error": {"message": message or f"the batch failed ({code})", "code": code}})


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"
