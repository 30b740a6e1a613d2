"""Small benchmark data sets in the published schemas, and a scripted server that answers
each problem as told, for the `maps eval` tests."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

from tests.conftest import critic_json, make_png, solver_json
from tests.fake_openai import Received, Reply

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
