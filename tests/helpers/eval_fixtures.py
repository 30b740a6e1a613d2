"""Small benchmark data sets in the published schemas, and a scripted server that answers
each problem as told, for the `maps eval` tests; and what the tests that stop, kill and resume
runs wait on (a held problem, a process gone)."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

from tests.helpers.common import critic_json, make_png, solver_json
from tests.helpers.fake_openai import Received, Reply

QUESTION_ID = re.compile(r"\[q:([A-Za-z0-9_-]+)\]")


def colour_regions(path: Path, colour: str, *, min_pixels: int = 6) -> int:
    """How many separate regions of exactly `colour` a PNG shows (bars, legend swatches)."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(path).convert("RGB"))
    mask = np.all(pixels == tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5)), axis=2)
    seen = np.zeros_like(mask)
    regions = 0
    for y, x in zip(*np.nonzero(mask)):
        if seen[y, x]:
            continue
        seen[y, x], stack, size = True, [(y, x)], 0
        while stack:
            cy, cx = stack.pop()
            size += 1
            for ny, nx in ((cy + 1, cx), (cy - 1, cx), (cy, cx + 1), (cy, cx - 1)):
                if 0 <= ny < mask.shape[0] and 0 <= nx < mask.shape[1] and mask[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    stack.append((ny, nx))
        regions += size >= min_pixels
    return regions


def write_mathvista_jsonl(folder: Path, n: int = 12) -> tuple[Path, dict[str, dict[str, Any]]]:
    """testmini.jsonl with images beside it; pids 1..n alternate general / math."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "images").mkdir(exist_ok=True)
    rows = {}
    with open(folder / "testmini.jsonl", "w") as handle:
        for number in range(1, n + 1):
            pid = str(number)
            make_png(folder / "images" / f"{pid}.png", mark=number)
            multi = number % 3 == 0
            row = {
                "pid": pid,
                "question": f"[q:{pid}] What is shown in figure {pid}?",
                "image": f"images/{pid}.png",
                "choices": ["red", "green", "blue"] if multi else None,
                "unit": None,
                "precision": None,
                "answer": "green" if multi else str(number * 2),
                "question_type": "multi_choice" if multi else "free_form",
                "answer_type": "text" if multi else "integer",
                "metadata": {"category": "general-vqa" if number % 2 else "math-targeted-vqa", "context": "diagram",
                             "grade": "high school", "language": "english", "skills": ["arithmetic reasoning"],
                             "source": "synthetic", "split": "testmini", "task": "figure question answering"},
                "query": f"What is shown in figure {pid}?",
            }
            handle.write(json.dumps(row) + "\n")
            rows[pid] = row
    return folder / "testmini.jsonl", rows


class ProblemScript:
    """Answers each role for each problem (identified by the [q:ID] tag in its question):
    the Solver gives `answers[pid]`; the Critic passes unless `critic_low` names the pid;
    `fail` names pids whose requests fail with HTTP 500."""

    def __init__(self, answers: dict[str, str], *, critic_low: set[str] | dict[str, str] = frozenset(), fail: set[str] = frozenset(),
                 delay_s: float = 0.0, baseline: bool = False, delay_for: dict[str, float] | None = None, meet: int = 0):
        self.answers = answers
        # pid -> the dimension the first review scores low (a set means "solution")
        self.critic_low = dict(critic_low) if isinstance(critic_low, dict) else dict.fromkeys(critic_low, "solution")
        self.delay_for = delay_for or {}
        self.fail = set(fail)
        self.delay_s = delay_s
        self.baseline = baseline
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.critic_seen: dict[str, int] = {}
        # meet=n: the first n requests wait (up to a minute) until all n are in flight, so a
        # client that runs problems concurrently shows it whatever the machine's speed.
        self.meeting = threading.Barrier(meet, timeout=60) if meet > 1 else None

    def _pid(self, request: Received) -> str | None:
        for message in request.messages:
            content = message.get("content")
            texts = [content] if isinstance(content, str) else [p.get("text", "") for p in content or [] if p.get("type") == "text"]
            for text in texts:
                match = QUESTION_ID.search(text or "")
                if match:
                    return match.group(1)
        return None

    def pid_of_critic(self, request: Received) -> str | None:
        return self._pid(request)

    def __call__(self, request: Received) -> Reply:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.meeting is not None and not self.meeting.broken:
                try:
                    self.meeting.wait()
                except threading.BrokenBarrierError:
                    pass  # fewer requests came at once: max_in_flight says so
                self.meeting.abort()  # met (or not) once; later requests go straight on
            delay = self.delay_s + self.delay_for.get(self._pid(request) or "", 0.0)
            if delay:
                time.sleep(delay)
            return self._reply(request)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _reply(self, request: Received) -> Reply:
        role = request.role
        pid = self._pid(request)
        if pid in self.fail:
            return Reply("scripted outage", status=500)
        answer = self.answers.get(pid or "", "0")
        if role in ("direct", "cot"):
            return Reply(f"Reasoning about the figure.\nThe answer is {answer}")
        if role == "solver":
            return Reply(solver_json(answer))
        if role == "critic":
            with self.lock:
                self.critic_seen[pid or ""] = self.critic_seen.get(pid or "", 0) + 1
                first = self.critic_seen[pid or ""] == 1
            if pid in self.critic_low and first:
                scores = {"caption": 5, "alignment": 5, "knowledge": 5, "solution": 5, self.critic_low[pid]: 2}
                return Reply(critic_json(**scores, worst=self.critic_low[pid]))
            return Reply(critic_json(5, 5, 5, 5))
        return Reply(f"{role} notes" + (f" for [q:{pid}]" if pid else ""))


class HoldLaterProblems:
    """`script`, except that every request of a problem other than the first `free` problems
    the server sees is held until `release()`; `wait_held(n)` returns once n requests are held.
    With --concurrency 2 and free=2: once two requests are held, the first two problems are
    finished and both workers wait inside a model call (events, not timing)."""

    def __init__(self, script: ProblemScript, free: int = 2):
        self.script = script
        self.free = free
        self.first: list[str] = []
        self.held = 0
        self.changed = threading.Condition()
        self.released = threading.Event()

    def __call__(self, request: Received) -> Reply:
        pid = self.script._pid(request)
        with self.changed:
            if pid is not None and pid not in self.first and len(self.first) < self.free:
                self.first.append(pid)
            hold = pid is not None and pid not in self.first
            if hold:
                self.held += 1
                self.changed.notify_all()
        if hold:
            self.released.wait(120)
        return self.script(request)

    def wait_held(self, count: int, timeout: float = 120) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.held >= count, timeout), f"only {self.held} requests held"

    def release(self) -> None:
        self.released.set()


# ----- for the tests that stop, kill and resume runs (processes, Slurm) ------------------------


def write_custom_jsonl(folder: Path, n: int) -> tuple[Path, dict[str, str]]:
    """A `maps eval custom` data file of n text-only problems p1..pn (numeric answers), and
    the answers the scripted server gives (p3, p6, ... wrong)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.jsonl"
    answers = {}
    with open(path, "w") as handle:
        for number in range(1, n + 1):
            pid = f"p{number}"
            handle.write(json.dumps({"id": pid, "question": f"[q:{pid}] What is {number} times 3?", "answer": number * 3,
                                     "category": "odd" if number % 2 else "even"}) + "\n")
            answers[pid] = str(number * 3 + (1 if number % 3 == 0 else 0))
    return path, answers


class HoldProblems:
    """`script`, except that the requests of the problems named in `hold` wait until
    `release()` (or `release(pid)`); `wait_held(pid)` returns once one of pid's requests waits."""

    def __init__(self, script: ProblemScript, hold: set[str] = frozenset()):
        self.script = script
        self.hold = set(hold)
        self.held: set[str] = set()
        self.changed = threading.Condition()

    def __call__(self, request: Received) -> Reply:
        pid = self.script._pid(request)
        with self.changed:
            if pid in self.hold:
                self.held.add(pid)
                self.changed.notify_all()
                self.changed.wait_for(lambda: pid not in self.hold, timeout=300)
                self.held.discard(pid)
        return self.script(request)

    def wait_held(self, pid: str, timeout: float = 180) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: pid in self.held, timeout), f"no request of {pid} held"

    def release(self, pid: str | None = None) -> None:
        with self.changed:
            self.hold = set() if pid is None else self.hold - {pid}
            self.changed.notify_all()


def wait_for(condition: Any, what: str, timeout: float = 180) -> None:
    """Wait until `condition()` is true (an event seen from outside: a file written, a process
    gone); fail naming `what` after a generous `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def process_state(pid: int) -> str | None:
    """A process's state letter from /proc (None when it is gone; a zombie is "Z")."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), None)


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie is dead: only its exit status is left)."""
    return process_state(pid) not in (None, "Z")


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (children, their children...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        ppid = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), 0)
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and alive(child):
                found.add(child)
                todo.append(child)
    return found
