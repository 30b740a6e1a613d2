"""Figures for the embedded local model (a script that prints, not a test).

    .venv/bin/python perf/local_model.py [--replies 10] [--solves 10] [--threads N] [--skip solve]

Prints: server start time (child process, and in-process for comparison), generation speed,
the JSON-schema parse and validation rate over N constrained replies, the wall time of a full
`maps solve` on the shipped example and the share of Solver/Critic replies that parsed without
repair over those runs, and peak RSS.
Figures depend on what else the machine is doing: the load average is printed with them.

To add a measurement (e.g. a full `maps solve` timing), write a function taking the Bench and
returning a list of Figure, and append it to MEASUREMENTS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import openai
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from maps_autogen.local.embedded import embedded_model_path
from maps_autogen.local.server import LocalServer
from maps_autogen.local.settings import LocalModelSettings
from tests.local_schema import Answer, json_schema_format


@dataclass(frozen=True)
class Figure:
    """One printed line: what was measured, its value and unit, and how to read it."""

    name: str
    value: float | str
    unit: str = ""
    note: str = ""


@dataclass
class Bench:
    """Shared state for measurements: settings, and one running server reused by all."""

    settings: LocalModelSettings
    replies: int
    solves: int = 10
    _server: LocalServer | None = field(default=None, repr=False)

    @property
    def server(self) -> LocalServer:
        if self._server is None:
            self._server = LocalServer(self.settings)
        return self._server

    @property
    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.server.base_url, api_key=self.server.api_key,
                             http_client=self.server.http_client(), max_retries=0)

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()


# --------------------------------------------------------------------------------------------
# measurements
# --------------------------------------------------------------------------------------------


def measure_start(bench: Bench, runs: int = 3) -> list[Figure]:
    """LocalServer() until /health answers, median of `runs` cold starts (page cache warm)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        with LocalServer(bench.settings):
            times.append(time.perf_counter() - started)
    return [Figure("server start (child process)", round(statistics.median(times), 2), "s",
                   f"median of {runs}: {', '.join(f'{t:.2f}' for t in times)}")]


_IN_PROCESS = """
import sys, time, xllamacpp
p = xllamacpp.CommonParams()
p.model.path = sys.argv[1]; p.n_ctx = int(sys.argv[2])
p.cpuparams.n_threads = p.cpuparams_batch.n_threads = int(sys.argv[3])
p.cpuparams.poll = p.cpuparams_batch.poll = 0
t = time.perf_counter(); s = xllamacpp.Server(p); print(time.perf_counter() - t)
"""


def measure_in_process_start(bench: Bench) -> list[Figure]:
    """For comparison: xllamacpp.Server() inside a Python process (what we chose not to do)."""
    plan_threads = str(bench.settings.n_threads or max(1, min((os.cpu_count() or 2) - 1, 8)))
    times, hangs = [], []
    for _ in range(3):
        try:
            out = subprocess.run([sys.executable, "-c", _IN_PROCESS, str(embedded_model_path()),
                                  str(bench.settings.n_ctx), plan_threads],
                                 capture_output=True, text=True, check=True, timeout=60)
        except subprocess.TimeoutExpired as hung:
            # Seen once: the process printed its start time, then never exited (~Server).
            printed = (hung.stdout or b"").decode() if isinstance(hung.stdout, bytes) else (hung.stdout or "")
            hangs.append("after start" if printed.strip() else "during start")
            continue
        times.append(float(out.stdout.strip().splitlines()[-1]))
    note = "model load only, no interpreter start-up or health check"
    if hangs:
        note += f"; {len(hangs)} run(s) hung {', '.join(hangs)} and were killed after 60 s"
    median = round(statistics.median(times), 2) if times else "hung"
    return [Figure("server start (in-process, for comparison)", median, "s", note)]


def measure_generation(bench: Bench, tokens: int = 256) -> list[Figure]:
    """A plain 256-token reply (ignore_eos keeps the length fixed): wall and server-side rates."""
    client = bench.client
    client.chat.completions.create(model=bench.server.model_name, max_tokens=8,  # warm the slot
                                   messages=[{"role": "user", "content": "Hi"}])
    started = time.perf_counter()
    reply = client.chat.completions.create(
        model=bench.server.model_name, max_tokens=tokens, temperature=0.7,
        messages=[{"role": "user", "content": "Explain how a lever works, step by step."}],
        extra_body={"ignore_eos": True},
    )
    wall = time.perf_counter() - started
    assert reply.usage is not None
    timings = (reply.model_extra or {}).get("timings", {})
    return [
        Figure("generation, end to end", round(reply.usage.completion_tokens / wall, 1), "tokens/s",
               f"{reply.usage.completion_tokens} tokens in {wall:.2f} s incl. prompt and HTTP"),
        Figure("generation, decode only", round(timings.get("predicted_per_second", 0.0), 1), "tokens/s",
               "llama.cpp's own timing"),
        Figure("prompt processing", round(timings.get("prompt_per_second", 0.0), 1), "tokens/s",
               f"{timings.get('prompt_n', '?')} prompt tokens"),
    ]


_QUESTIONS = [
    "What is 2+2?", "A lever has arms of 2 m and 1 m; 10 N pushes the long arm. What force balances it?",
    "What is the mass of one litre of water?", "How long does sunlight take to reach Earth?",
    "At what temperature does water boil at sea level?", "What is 7 times 6?",
    "What is the weight of 2 kg on Earth?", "What is the period of a 1 m pendulum?",
    "How far does a car at 20 m/s go in 3 s?", "What is the unit of force?",
]


def measure_json_schema(bench: Bench) -> list[Figure]:
    """N replies under response_format json_schema (strict): how many parse, how many validate."""
    client = bench.client
    response_format = json_schema_format(Answer)
    parsed = valid = truncated = 0
    tokens = []
    started = time.perf_counter()
    for index in range(bench.replies):
        reply = client.chat.completions.create(
            model=bench.server.model_name, max_tokens=512, temperature=0.7, seed=index,
            messages=[{"role": "system", "content": "You are a physics tutor. Reply with JSON only."},
                      {"role": "user", "content": _QUESTIONS[index % len(_QUESTIONS)]}],
            response_format=response_format,
        )
        assert reply.usage is not None
        tokens.append(reply.usage.completion_tokens)
        truncated += reply.choices[0].finish_reason == "length"
        try:
            data = json.loads(reply.choices[0].message.content or "")
            parsed += 1
            Answer.model_validate(data)
            valid += 1
        except (ValueError, ValidationError):
            pass
    wall = time.perf_counter() - started
    n = bench.replies
    return [
        Figure("json_schema replies that parse", f"{parsed}/{n}", "", f"{truncated} cut by max_tokens"),
        Figure("json_schema replies that validate", f"{valid}/{n}", "", "pydantic model_validate"),
        Figure("json_schema reply time", round(wall / n, 2), "s/reply",
               f"mean {statistics.mean(tokens):.0f} tokens per reply"),
    ]


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure_rss(bench: Bench) -> list[Figure]:
    """Peak resident memory of the server child (after the other measurements) and of us."""
    return [
        Figure("peak RSS, server process", round(_peak_rss_mb(bench.server.pid), 0), "MB",
               f"n_ctx {bench.settings.n_ctx}"),
        Figure("peak RSS, this (client) process", round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0),
               "MB", ""),
    ]


ROOT = Path(__file__).resolve().parents[1]


def measure_solve(bench: Bench) -> list[Figure]:
    """Full `maps solve` runs on the shipped example with the embedded model (no API key):
    wall time, and the share of Solver/Critic replies that parsed without any repair."""
    import tempfile

    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    maps = Path(sys.executable).parent / "maps"
    runs_dir = Path(tempfile.mkdtemp(prefix="maps-local-bench-"))
    walls: list[float] = []
    clean = total = 0
    for _ in range(bench.solves):
        started = time.monotonic()
        result = subprocess.run([str(maps), "solve", "--problem", str(ROOT / "examples/lever/problem.yaml"), "--json",
                                 "--runs-dir", str(runs_dir)], env=env, capture_output=True, text=True)
        walls.append(time.monotonic() - started)
        if result.returncode != 0:
            return [Figure("maps solve", "failed", "", result.stderr.strip().splitlines()[-1] if result.stderr else "")]
        run_dir = Path(json.loads(result.stdout)["run_dir"])
        for line in (run_dir / "transcript.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "message" and record.get("role") in ("solver", "critic"):
                total += 1
                parsed = record.get("parsed")
                clean += bool(parsed) and not parsed.get("repaired") and parsed.get("parsed", True)
    return [
        Figure("maps solve on examples/lever, first run", round(walls[0], 1), "s", "includes the server start"),
        Figure("maps solve, mean over runs", round(statistics.mean(walls), 1), "s", f"{bench.solves} runs"),
        Figure("Solver/Critic replies parsed without repair", f"{clean}/{total}", "", f"{bench.solves} runs"),
    ]


Measurement = Callable[[Bench], list[Figure]]
MEASUREMENTS: list[tuple[str, Measurement]] = [
    ("start", measure_start),
    ("in_process_start", measure_in_process_start),
    ("generation", measure_generation),
    ("json_schema", measure_json_schema),
    ("solve", measure_solve),
    ("rss", measure_rss),  # keep last: it reports the peak after everything above
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replies", type=int, default=10, help="constrained replies to score")
    parser.add_argument("--solves", type=int, default=10, help="full maps solve runs to time and score")
    parser.add_argument("--threads", type=int, default=None, help="n_threads (default: CPUs - 1)")
    parser.add_argument("--n-ctx", type=int, default=LocalModelSettings().n_ctx)
    parser.add_argument("--skip", nargs="*", default=[], choices=[name for name, _ in MEASUREMENTS])
    args = parser.parse_args(argv)

    bench = Bench(LocalModelSettings(n_threads=args.threads, n_ctx=args.n_ctx), replies=args.replies,
                  solves=args.solves)
    print(f"model: {embedded_model_path().name}  cpus: {os.cpu_count()}  "
          f"load average at start: {os.getloadavg()[0]:.2f}")
    try:
        for name, measure in MEASUREMENTS:
            if name in args.skip:
                continue
            for figure in measure(bench):
                print(f"{figure.name:<42} {figure.value!s:>8} {figure.unit:<9} {figure.note}", flush=True)
    finally:
        bench.close()
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
