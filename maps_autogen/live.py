"""The live view of a chat in the terminal: who speaks, what they said, scores, rollbacks."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from maps_autogen.redact import StreamRedactor, escape_controls, terminal_safe

ROLE_STYLES = {
    "user_proxy": "bold white",
    "interpreter": "bold magenta",
    "aligner": "bold blue",
    "scholar": "bold green",
    "solver": "bold yellow",
    "critic": "bold red",
}


def _safe(value: Any) -> Text:
    """Untrusted text as a rich Text: no markup, secrets masked, control characters escaped."""
    return Text(terminal_safe(str(value)))


class LiveConsole:
    """Prints chat records as they arrive. Model output is printed as plain text (no markup),
    with secrets masked and terminal control sequences shown escaped; our own styling is
    applied around it."""

    def __init__(self, file: TextIO | None = None, *, max_chars: int | None = None):
        self.console = Console(file=file, highlight=False, soft_wrap=True, emoji=False)
        self.max_chars = max_chars
        self._streamed: set[tuple[str, int]] = set()
        self._stream_redactor = StreamRedactor()
        self._turn = 0

    def _header(self, agent: str, role: str, detail: str) -> None:
        self.console.print(Text(f"\n── {terminal_safe(agent)} ", style=ROLE_STYLES.get(role, "bold")) + Text(terminal_safe(detail), style="dim"))

    def emit(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "turn_start":
            leftover = self._stream_redactor.flush()  # the tail of a stream that ended without a message
            if leftover:
                self.console.print(Text(escape_controls(leftover)))
            self._turn += 1
            return
        if kind == "token":
            if (record["role"], self._turn) not in self._streamed:
                self._streamed.add((record["role"], self._turn))
                self._header(record["role"].capitalize(), record["role"], "(streaming)")
            self.console.print(Text(escape_controls(self._stream_redactor.feed(record["text"]))), end="")
            return
        if kind == "message":
            self._message(record)
        elif kind == "event":
            self._event(record)

    def _message(self, record: dict[str, Any]) -> None:
        role = record["role"]
        streamed = (role, self._turn) in self._streamed
        if not streamed:
            detail = f"step {record['step']}, round {record['round']}" + (" (revision)" if record.get("revision") else "")
            usage = record.get("usage") or {}
            if usage.get("seconds") is not None:
                detail += f", {usage['seconds']:.1f}s"
            if usage.get("truncated"):
                detail += ", reply truncated at limits.reply_bytes"
            self._header(record["agent"], role, detail)
            content = record.get("content") or ""
            if self.max_chars and len(content) > self.max_chars:
                content = content[: self.max_chars] + " …"
            self.console.print(_safe(content))
        else:
            self.console.print(Text(escape_controls(self._stream_redactor.flush())))
        parsed = record.get("parsed") or {}
        if role == "critic" and "scores" in parsed:
            table = Table(title="Critic's scores", show_header=True, header_style="bold")
            for dimension in parsed["scores"]:
                table.add_column(_safe(dimension))
            table.add_row(*(_safe(score) for score in parsed["scores"].values()))
            self.console.print(table)
        if role == "solver" and "final_answer" in parsed:
            self.console.print(Text("Solver's answer: ", style="bold") + _safe(parsed["final_answer"]))

    def _event(self, record: dict[str, Any]) -> None:
        event = record.get("event")
        if event == "rollback":
            scores = ", ".join(f"{k} {v}" for k, v in record.get("scores", {}).items())
            self.console.print(Text(terminal_safe(f"\n↺ rollback {record['number']}: re-running from the {record['step']} step ({scores})"), style="bold cyan"))
            if record.get("question"):
                self.console.print(Text("  question sent back: ", style="cyan") + _safe(record["question"]))
        elif event == "stop":
            self.console.print(Text(terminal_safe(f"\n■ stopped: {record['stop_reason']}"), style="bold"))
        elif event in ("interpreter_skipped", "images_dropped", "images_withheld", "solver_unparsed", "critic_unparseable", "max_tokens_reached", "error"):
            self.console.print(Text(terminal_safe(f"\n! {record.get('detail', event)}"), style="yellow"))
