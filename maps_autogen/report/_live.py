"""The live view of a chat in the terminal: who speaks, what they said, scores, rollbacks, and
after the first reply an estimate of the time left, from the measured speed."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from maps_autogen._util import DataError, StreamRedactor, escape_controls, terminal_safe
from maps_autogen.orchestration import calls_left, sent_parts
from maps_autogen.records import (
    USER_PROXY_ROLE,
    AnswerParsed,
    ChatRecord,
    EventRecord,
    FlowRecord,
    MessageRecord,
    RollbackEvent,
    StopEvent,
    TokenRecord,
    TurnStartRecord,
    VerdictParsed,
    read_run,
)
from maps_autogen.report._labels import sender, stop_words, title
from maps_autogen.report._replies import ReadReply, read_reply
from maps_autogen.settings import answer_with_option, possessive

# Each speaker gets the next style as it first appears (step names come from the team).
ROLE_STYLES = ("bold magenta", "bold blue", "bold green", "bold yellow", "bold red", "bold cyan")
USER_PROXY_STYLE = "bold white"


def _safe(value: Any) -> Text:
    """Untrusted text as a rich Text: no markup, secrets masked, control characters escaped."""
    return Text(terminal_safe(str(value)))


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def time_left(flow: FlowRecord, rollback_step: str | None, rollbacks: int, call_seconds: Sequence[float],
              made: int = 0) -> str:
    """The calls left (fewest to most, by the flow's plan: flow.calls_left) times the mean measured
    call, as one line."""
    least, most = calls_left(flow, rollback_step, rollbacks)
    least, most = max(0, least - made), max(0, most - made)
    mean = sum(call_seconds) / len(call_seconds)
    span = f"{least}" if least == most else f"{least}-{most}"
    return (f"≈ {span} more model call{'s' if most != 1 else ''} at ~{mean:.1f} s each (measured so far): about "
            f"{_minutes(least * mean)}" + ("" if least == most else f" to {_minutes(most * mean)}") + " left")


class _Pace:
    """What both views estimate the time left from: the chat's flow (its run.json, read once),
    the measured model calls, and the rollbacks that spent the reviewer's budget (the person's
    do not: flow.calls_left counts the reviewer's rollbacks left)."""

    def __init__(self) -> None:
        self.run_dir: Path | None = None  # set once the run folder exists (`watch`)
        self._flow: FlowRecord | None = None
        self._read = False
        self.call_seconds: list[float] = []  # measured model calls (replies from the cache are not)
        self.reviewer_rollbacks = 0

    def flow(self) -> FlowRecord | None:
        """The chat's flow, read from its run.json at the first need (the chat writes it before
        its first call) and never again; None before the folder is known or when its run.json
        cannot be read (then no estimate is said)."""
        if not self._read and self.run_dir is not None:
            self._read = True
            with suppress(DataError):
                self._flow = read_run(self.run_dir).flow
        return self._flow

    def measure(self, record: MessageRecord) -> bool:
        """Count the time of a model reply (not the UserProxy's, not one from the cache); True
        when it is the first measured, after which the time left is first said."""
        took, cached = _took_and_cached(record)
        if record.role == USER_PROXY_ROLE or took is None or cached:
            return False
        self.call_seconds.append(took)
        return len(self.call_seconds) == 1

    def rolled_back(self, record: RollbackEvent) -> None:
        """Count a rollback the reviewer sent (one the person sent spends no reviewer budget)."""
        self.reviewer_rollbacks += record.by != "user"

    def left(self, rollback_step: str | None, made: int = 0) -> str | None:
        """The time-left line (time_left), or None while there is nothing to estimate from."""
        flow = self.flow()
        if flow is None or not self.call_seconds:
            return None
        return time_left(flow, rollback_step, self.reviewer_rollbacks, self.call_seconds, made)


def _took_and_cached(record: MessageRecord) -> tuple[float | None, bool]:
    """How long a reply took (the call's time, else the turn's) and whether it came from the cache."""
    usage = record.usage
    took = usage.seconds if usage is not None and usage.seconds is not None else record.seconds
    return took, usage is not None and usage.cached


class ProgressLines:
    """`maps solve --json`'s progress on standard error, where the JSON on standard output stays
    alone: one plain line per finished reply, rollback, event and stop, and after the first reply
    the time left from the measured speed (as the live view says it). Untrusted text is made safe
    for a terminal; replies themselves are not shown (they are in the transcript)."""

    def __init__(self, file: TextIO) -> None:
        self.file = file
        self._pace = _Pace()

    def watch(self, run_dir: Path) -> None:
        """The run folder of the chat (its run.json records the chat's flow)."""
        self._pace.run_dir = run_dir

    def _say(self, text: str | None) -> None:
        if text is not None:
            self.file.write(terminal_safe(text) + "\n")
            self.file.flush()

    def emit(self, record: ChatRecord) -> None:
        """Say one record, if it is one said (turn starts and streamed text are not)."""
        if isinstance(record, MessageRecord):
            if record.role == USER_PROXY_ROLE:
                return
            took, cached = _took_and_cached(record)
            self._say(f"{record.agent} replied" + (f" in {took:.1f} s" if took is not None else "")
                      + (" (from the cache)" if cached else ""))
            if self._pace.measure(record):
                self._say(self._pace.left(None, made=1))
        elif isinstance(record, RollbackEvent):
            self._pace.rolled_back(record)
            self._say(f"rollback {record.number}: re-running from the {record.step} step")
            self._say(self._pace.left(record.step))
        elif isinstance(record, StopEvent):
            self._say(f"stopped: {record.stop_reason}")
        elif isinstance(record, EventRecord):
            self._say(f"! {record.detail or record.event}")


class _PipeConsole(Console):
    """A rich Console that leaves a closed standard output to the command: rich's own answer is
    to exit at once (code 1, the run left unfinished); this raises BrokenPipeError instead, which
    `interrupts.ClosedOutputGuard` turns into a clean stop."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError("standard output was closed")


class LiveConsole:
    """Prints chat records as they arrive. Model output is printed as plain text (no markup),
    with secrets masked and terminal control sequences shown escaped; our own styling is
    applied around it."""

    def __init__(self, file: TextIO | None = None, *, max_chars: int | None = None, options: Sequence[str] = ()):
        self.console = _PipeConsole(file=file, highlight=False, soft_wrap=True, emoji=False)
        self.max_chars = max_chars
        self.options = tuple(options)  # the problem's options: an answer letter is shown with its text
        self._streamed: set[tuple[str, int]] = set()
        self._stream_redactor = StreamRedactor()
        self._turn = 0
        self._styles: dict[str, str] = {}
        self._pace = _Pace()  # the flow, the measured calls and the reviewer's rollbacks: the estimate

    def watch(self, run_dir: Path) -> None:
        """The run folder of the chat this console shows (its run.json records the chat's flow)."""
        self._pace.run_dir = run_dir

    def _style(self, role: str) -> str:
        if role == USER_PROXY_ROLE:
            return USER_PROXY_STYLE
        if role not in self._styles:
            self._styles[role] = ROLE_STYLES[len(self._styles) % len(ROLE_STYLES)]
        return self._styles[role]

    def _header(self, agent: str, role: str, detail: str) -> None:
        self.console.print(
            Text(f"\n── {terminal_safe(agent)} ", style=self._style(role)) + Text(terminal_safe(detail), style="dim")
        )

    def emit(self, record: ChatRecord) -> None:
        if isinstance(record, TurnStartRecord):
            leftover = self._stream_redactor.flush()  # the tail of a stream that ended without a message
            if leftover:
                self.console.print(Text(escape_controls(leftover)))
            self._turn += 1
            return
        if isinstance(record, TokenRecord):
            if (record.role, self._turn) not in self._streamed:
                self._streamed.add((record.role, self._turn))
                self._header(record.role.capitalize(), record.role, "(streaming)")
            self.console.print(Text(escape_controls(self._stream_redactor.feed(record.text))), end="")
            return
        if isinstance(record, MessageRecord):
            self._message(record)
            if self._pace.measure(record):  # after the first measured reply: how long the rest may take
                self._estimate(None, made=1)
        else:
            self._event(record)
            if isinstance(record, RollbackEvent):
                self._pace.rolled_back(record)
                self._estimate(record.step)

    def _estimate(self, rollback_step: str | None, made: int = 0) -> None:
        """One dim line: the calls left (fewest to most, by the flow's plan) times the mean measured call."""
        line = self._pace.left(rollback_step, made)
        if line is not None:
            self.console.print(Text(line, style="dim"))

    def _message(self, record: MessageRecord) -> None:
        role = record.role
        streamed = (role, self._turn) in self._streamed
        if not streamed:
            # The header names the step (the agent); record.step is the dimension the step is scored on.
            detail = f"round {record.round}" + (" (revision)" if record.revision else "")
            usage = record.usage
            if usage is not None and usage.seconds is not None:
                detail += f", {usage.seconds:.1f}s"
            if usage is not None and usage.truncated:
                detail += ", reply truncated at limits.reply_bytes"
            self._header(record.agent, role, detail)
            reading = read_reply(record.content, record.parsed)
            if reading is not None:
                self._reading(reading)
            else:
                content = record.content
                if self.max_chars and len(content) > self.max_chars:
                    content = content[: self.max_chars] + " …"
                self.console.print(_safe(content))
        else:
            self.console.print(Text(escape_controls(self._stream_redactor.flush())))
        # What the reply parsed into says what it is (a verdict or an answer), whatever the step's name.
        verdict = record.parsed
        if isinstance(verdict, VerdictParsed):
            scores = verdict.scores
            whose = possessive(terminal_safe(record.agent))
            table = Table(title=f"{whose} scores", show_header=True, header_style="bold")
            table.add_column("")
            for dimension in scores:
                table.add_column(_safe(dimension))
            table.add_row("score", *(_safe(score) for score in scores.values()))
            if verdict.feedback:
                table.add_row("feedback", *(_safe(verdict.feedback_on(dimension)) for dimension in scores))
            self.console.print(table)
        elif isinstance(read := record.parsed, AnswerParsed):
            answer = self.answer_text(read.final_answer)
            whose = possessive(terminal_safe(record.agent))
            self.console.print(Text(f"{whose} answer: ", style="bold") + _safe(answer))

    def answer_text(self, answer: str) -> str:
        """An answer as shown: an option's letter with the option's text ("C. 3 kg")."""
        return answer_with_option(answer, self.options)

    def _reading(self, reading: ReadReply) -> None:
        """A structured reply as headed paragraphs (the raw reply stays in the run's transcript)."""
        for section in reading.sections:
            text = section.text
            if self.max_chars and len(text) > self.max_chars:
                text = text[: self.max_chars] + " …"
            self.console.print(Text(terminal_safe(section.heading), style="bold underline"))
            self.console.print(_safe(text))

    def _event(self, record: EventRecord) -> None:
        event = record.event
        if isinstance(record, RollbackEvent):
            # Who sent it and which step re-runs, as the record says (the person at a pause: you).
            who = "you" if record.by == "user" else sender(record)
            why = "" if record.by == "user" else " (" + ", ".join(f"{k} {v}" for k, v in record.scores.items()) + ")"
            self.console.print(Text(terminal_safe(
                f"\n↺ rollback {record.number}: {who} sent the {record.step} step back; it re-runs, then every step "
                f"after it{why}"), style="bold cyan"))
            sent = sent_parts(record.by, record.question, record.score, record.evaluation)
            if sent:
                self.console.print(Text(terminal_safe(f"  sent to the {record.step} step by {who}:"), style="cyan"))
            for part, text in sent:
                self.console.print(Text(f"    {part}: ", style="cyan") + _safe(text))
        elif isinstance(record, StopEvent):
            flow = self._pace.flow()
            reviewer = flow.reviewer if flow is not None else None  # the reviewer's step, as the flow records it
            words = stop_words(record.stop_reason, reviewer=title(reviewer) if reviewer else None,
                               rollbacks=self._pace.reviewer_rollbacks,
                               max_rollbacks=flow.max_rollbacks if flow else None)
            self.console.print(Text(terminal_safe(f"\n■ stopped: {record.stop_reason}: {words}"), style="bold"))
        else:
            self.console.print(Text(terminal_safe(f"\n! {record.detail or event}"), style="yellow"))
