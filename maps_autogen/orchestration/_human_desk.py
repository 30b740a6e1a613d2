"""Where a paused chat waits for the person: the terminal and the live page both answer.

`HumanDesk.ask` is the chat's `on_human` for `maps solve --human`: it prints the pause on standard
error, reads one line from standard input and, with `--view`, takes the page's answer too
(`HumanDesk.answer`, posted with the page's token); the first answer the pause takes wins and the
other side is told. Standard input is read on a daemon thread only while a pause wants a line (a
line typed ahead waits in the terminal), from the file descriptor itself (a thread blocked in a
buffered read would hold the buffer's lock when the interpreter exits), at most
`MAX_ANSWER_CHARS` characters per line. When standard input ends, the page answers alone; with no
page, every later pause continues (said once). With `wait_s` (`human.wait_s`), a pause nobody
answers within that many seconds continues on its own (said on the terminal and the page).
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from maps_autogen._util import terminal_safe
from maps_autogen.orchestration._human import (
    MAX_ANSWER_CHARS,
    HumanAnswerError,
    HumanDecision,
    HumanState,
    parse_answer,
)
from maps_autogen.records import AnswerSource

#: A line longer than this many bytes is not taken (UTF-8 takes at most 4 bytes a character).
MAX_LINE_BYTES = 4 * MAX_ANSWER_CHARS + 4
_READ_BYTES = 4096
_WAIT_S = 1.0  # how often a waiting pause looks again (a Ctrl-C interrupts it at once)


@dataclass(frozen=True)
class _TooLong:
    """A line past MAX_LINE_BYTES, read to its end and dropped."""


TOO_LONG = _TooLong()
Line = str | _TooLong | None  # None: the input has ended
LineTaker = Callable[[Line], None]


class TerminalLines:
    """One line of a stream at a time, read on a daemon thread while someone wants one; the line
    goes to whoever wants it when it arrives (else to the last who did, who says it came late).
    One reader per stream object in the process, so two solves in a row never read the same
    input twice."""

    _readers: dict[int, TerminalLines] = {}
    _readers_lock = threading.Lock()

    def __init__(self, stream: TextIO):
        self._stream = stream
        try:
            self._fd: int | None = stream.fileno()
        except (OSError, ValueError, io.UnsupportedOperation):
            self._fd = None  # a stream in memory (a test's): its reads never block
        try:
            self.interactive = stream.isatty()  # a person types (else a script pipes lines in)
        except (OSError, ValueError):
            self.interactive = False
        self._buffer = b""
        self._discarding = False
        self._lock = threading.Lock()
        self._wanted: LineTaker | None = None
        self._last: LineTaker | None = None
        self._reading = False
        self.ended = False

    @classmethod
    def of(cls, stream: TextIO) -> TerminalLines:
        """The reader of `stream` (one per stream object: standard input's for every solve)."""
        with cls._readers_lock:
            reader = cls._readers.get(id(stream))
            if reader is None or reader._stream is not stream:
                reader = cls._readers[id(stream)] = cls(stream)
            return reader

    def want(self, taker: LineTaker) -> None:
        """Hand the next line to `taker` (from the reading thread)."""
        with self._lock:
            if self.ended:
                return
            self._wanted = self._last = taker
            if self._reading:
                return
            self._reading = True
        threading.Thread(target=self._run, name="maps-human-input", daemon=True).start()

    def withdraw(self, taker: LineTaker) -> None:
        """`taker` no longer wants a line (a line already being read still reaches it, late)."""
        with self._lock:
            if self._wanted is taker:
                self._wanted = None

    def _run(self) -> None:
        while True:
            line = self._read()
            with self._lock:
                target = self._wanted if self._wanted is not None else self._last
                self._wanted = None
                self.ended = line is None
            if target is not None:
                target(line)  # may want the next line (an answer this pause did not take)
            if self._finished():
                return

    def _finished(self) -> bool:
        """Whether the reading thread stops: nobody wants a line (any more), or the input ended."""
        with self._lock:
            if self._wanted is None or self.ended:
                self._reading = False
                return True
            return False

    def _read(self) -> Line:
        if self._fd is None:
            return self._read_stream()
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line, self._buffer = self._buffer[:newline], self._buffer[newline + 1 :]
                if self._discarding:
                    self._discarding = False
                    return TOO_LONG
                return line.decode("utf-8", "replace").rstrip("\r")
            if len(self._buffer) > MAX_LINE_BYTES:
                self._buffer, self._discarding = b"", True
            chunk = os.read(self._fd, _READ_BYTES)
            if not chunk:
                rest, self._buffer = self._buffer, b""
                if self._discarding:
                    self._discarding = False
                    return TOO_LONG
                return rest.decode("utf-8", "replace").rstrip("\r") if rest else None
            self._buffer += chunk

    def _read_stream(self) -> Line:
        text = self._stream.readline(MAX_ANSWER_CHARS + 1)
        if not text:
            return None
        if len(text) > MAX_ANSWER_CHARS and not text.endswith("\n"):
            while (more := self._stream.readline(MAX_ANSWER_CHARS)) and not more.endswith("\n"):
                pass
            return TOO_LONG
        return text.rstrip("\r\n")


class HumanDesk:
    """The pause a chat waits at, answered from the terminal (`terminal`: standard input) and, with
    `page`, from the live page; prompts and notices go to `out` (standard error). `ask` is the
    chat's `on_human`; the page follows `snapshot` and answers through `answer`. With `wait_s`,
    a pause nobody answers in that many seconds (on `clock`) continues as planned."""

    def __init__(self, *, terminal: TextIO | None = None, page: bool = False, out: TextIO | None = None,
                 wait_s: float | None = None, clock: Callable[[], float] = time.monotonic):
        self._wait_s = wait_s
        self._clock = clock
        self._out = out if out is not None else sys.stderr
        self._terminal = TerminalLines.of(terminal) if terminal is not None else None
        self._page = page
        self._changed = threading.Condition()
        self._state: HumanState | None = None
        self._decision: HumanDecision | None = None
        self._last: dict[str, Any] | None = None  # the last pause's answer, for the page
        self._told_end = False
        self.version = 0  # changes whenever a pause opens or is answered

    # ----- the chat's side ----------------------------------------------------------------
    def ask(self, state: HumanState) -> HumanDecision:
        """Show the pause and wait for the first answer it takes (Ctrl-C interrupts the wait)."""
        with self._changed:
            self._state, self._decision = state, None
            self.version += 1
            self._changed.notify_all()
        deadline = None if self._wait_s is None else self._clock() + self._wait_s
        self._say(*state.prompt_lines(), *([] if self._wait_s is None else [
            f"   nobody answering: the chat continues on its own after {self._wait_s:g} s (human.wait_s)"]))
        try:
            if self._terminal is not None:
                self._terminal.want(self._from_terminal)
                self._prompt()
            with self._changed:
                while (decision := self._taken()) is None:
                    left = None if deadline is None else deadline - self._clock()
                    if self._nobody_can_answer():
                        self._take(state, HumanDecision(source="end_of_input"))
                    elif left is not None and left <= 0:
                        self._take(state, HumanDecision(source="timeout"))
                    else:
                        self._changed.wait(_WAIT_S if left is None else min(_WAIT_S, left))
        finally:
            if self._terminal is not None:
                self._terminal.withdraw(self._from_terminal)
            with self._changed:
                if self._state is state:  # left unanswered (Ctrl-C): the page stops showing it
                    self._state = None
                    self.version += 1
                    self._changed.notify_all()
        if decision.source == "page":
            self._say(f"UserProxy: answered on the page: {decision.said or decision.line}")
        elif decision.source == "timeout":
            if self._terminal is not None and self._terminal.interactive:
                self._out.write("\n")  # after the prompt nobody answered
            self._say(f"UserProxy: no answer in {self._wait_s:g} s: the chat continues as planned")
        return decision

    def _taken(self) -> HumanDecision | None:
        """The open pause's answer, once one was taken (under the lock)."""
        return self._decision

    def _nobody_can_answer(self) -> bool:
        if self._page:
            return False
        if self._terminal is None or self._terminal.ended:
            return True
        return False

    # ----- the answers ------------------------------------------------------------------------
    def answer(self, pause: int, line: str, source: AnswerSource) -> tuple[int, str]:
        """Answer pause number `pause` with `line`: (200, the decision's line) when taken; (409,
        why) when the pause is not open any more (answered elsewhere first); (400, why) when the
        pause cannot take the line (the pause stays open)."""
        with self._changed:
            state = self._state
            if state is None or state.pause != pause:
                answered = self._last if self._last is not None and self._last["pause"] == pause else None
                where = f" (answered from the {answered['source']})" if answered else ""
                return 409, f"pause {pause} is not waiting for an answer{where}"
            try:
                decision = parse_answer(line, state, source=source)
            except HumanAnswerError as error:
                return 400, str(error)
            self._take(state, decision)
            return 200, decision.line

    def _take(self, state: HumanState, decision: HumanDecision) -> None:
        """Close the pause with `decision` (under the lock): any later answer finds it answered."""
        self._decision = decision
        self._last = {"pause": state.pause, "source": decision.source, "line": decision.said or decision.line}
        self._state = None
        self.version += 1
        self._changed.notify_all()

    def _from_terminal(self, line: Line) -> None:
        if line is None:
            with self._changed:
                self._changed.notify_all()
            if not self._told_end:
                self._told_end = True
                self._say("UserProxy: standard input has ended: " + (
                    "answer on the live page" if self._page else "the chat continues at every pause"))
            return
        with self._changed:
            pause = self._state.pause if self._state is not None else -1
        if isinstance(line, _TooLong):
            status, why = 400, f"the line is longer than {MAX_ANSWER_CHARS} characters"
        else:
            status, why = self.answer(pause, line, "terminal")
        if status == 400:
            self._say(f"   not taken: {why}")
            if self._terminal is not None:
                self._terminal.want(self._from_terminal)
                self._prompt()
        elif status == 409:
            self._say("UserProxy: that line came after the pause was answered on the page; it was not used")

    # ----- what the page shows ----------------------------------------------------------
    def snapshot(self) -> tuple[int, dict[str, Any]]:
        """(version, the open pause as JSON or None (with `wait_s`: how long it waits before it
        continues on its own, None for ever), the last pause's answer)."""
        with self._changed:
            state = {**self._state.as_dict(), "wait_s": self._wait_s} if self._state is not None else None
            return self.version, {"waiting": state is not None, "state": state, "last": self._last}

    # ----- the terminal -----------------------------------------------------------------
    def _say(self, *lines: str) -> None:
        for line in lines:
            self._out.write(terminal_safe(line) + "\n")
        self._out.flush()

    def _prompt(self) -> None:
        """The prompt a person types after (none for piped input: nobody reads it, and the next
        output would follow it on the same line)."""
        if self._terminal is not None and self._terminal.interactive and not self._terminal.ended:
            self._out.write("UserProxy> ")
            self._out.flush()


__all__ = ["MAX_LINE_BYTES", "HumanDesk", "TerminalLines"]
