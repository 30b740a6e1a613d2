"""The eval's worker pool (daemon threads that keep their AG2 agents across problems) and its
progress bar."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any

from maps_autogen.records import Usage


class DaemonWorkers:
    """A fixed set of daemon worker threads for the problems in flight.

    Daemon threads: on Ctrl-C the process exits without waiting for the problems in flight
    (their model calls are cancelled, their work is not counted). Long-lived workers: each
    keeps its AG2 agents (chat.agents_for) across the problems it solves."""

    def __init__(self, count: int):
        self._queue: queue.SimpleQueue[tuple[Future[Any], Any, tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._count = count
        for _ in range(count):
            threading.Thread(target=self._work, name="maps-eval", daemon=True).start()

    def _work(self) -> None:
        while (task := self._queue.get()) is not None:
            future, function, args = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args))
            except BaseException as error:  # noqa: BLE001 - handed to the main thread, which records it
                future.set_exception(error)

    def submit(self, function: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._queue.put((future, function, args))
        return future

    def close(self) -> None:
        """Let every worker end once the queue is drained (never waits for them)."""
        for _ in range(self._count):
            self._queue.put(None)


def progress_note(accuracy: float | None, cost: float | None, prompt_tokens: int, cached_tokens: int) -> str:
    """The progress bar's text: accuracy, cost (None: unknown) and the share of prompt tokens
    the services read from their caches, so far."""
    acc = "-" if accuracy is None else f"{accuracy:.1f}%"
    spent = "unknown" if cost is None else f"${cost:.4f}"
    cached = f" · cached {100 * cached_tokens / prompt_tokens:.0f}% of prompt" if prompt_tokens else ""
    return f"acc {acc} · cost {spent}{cached}"


class Progress:
    """A progress bar on stderr with ETA, accuracy so far and cost so far."""

    def __init__(self, total: int, enabled: bool):
        self.enabled = enabled and total > 0
        self.prompt_tokens = 0
        self.cached_tokens = 0
        self._note = ""  # progress_note's text
        self._rounds = ""  # with --batch: the round, its batches' own counts and the wait
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                  TextColumn("{task.description}"), console=Console(stderr=True), transient=False)
        self._task = self._progress.add_task("", total=total)
        self._progress.start()

    def advance(self, accuracy: float | None, cost: float | None, used: Usage | None = None) -> None:
        """One more problem done, with its usage (its prompt tokens, of them the cached ones);
        `cost` None: some call's cost is unknown (as the summary says)."""
        if used is not None:
            self.prompt_tokens += used.prompt_tokens
            self.cached_tokens += used.cached_tokens
        self._note = progress_note(accuracy, cost, self.prompt_tokens, self.cached_tokens)
        if self.enabled:
            self._progress.update(self._task, advance=1, description=self._shown())

    def status(self, text: str) -> None:
        """With --batch: the round, its batches' own counts and how long it has waited, shown
        beside the accuracy and cost."""
        self._rounds = text
        if self.enabled:
            self._progress.update(self._task, description=self._shown())

    def _shown(self) -> str:
        return " · ".join(part for part in (self._note, self._rounds) if part)

    def close(self) -> None:
        if self.enabled:
            self._progress.stop()



__all__ = ["DaemonWorkers", "Progress", "progress_note"]
