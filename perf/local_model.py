"""Figures for the embedded local model (a script that prints, not a test).

    .venv/bin/python perf/local_model.py [--replies 10] [--solves 10] [--threads N] [--skip solve]
    .venv/bin/python perf/local_model.py --short     # CI: two small calls, checks the script runs

Prints: server start time (child process, and in-process for comparison), generation speed,
prompt speed on a real problem's requests (the shipped example's steps, as `maps solve` sends
them to this model), with and without llama.cpp's prompt cache, beside the same requests in the
paper's layout (`prompt_layout: paper`, no shared prefix), the JSON-schema parse and validation rate over N
constrained replies, the wall time of a full `maps solve` on the shipped example and the share
of Solver/Critic replies that parsed without repair over those runs, and peak RSS.
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
from typing import Any

import openai
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from maps_autogen.model.local import LocalModelSettings, LocalServer, embedded_model_path
from tests.helpers.local_schema import Answer, json_schema_format


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
    short: bool = False
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


# A step's notes as long as this model writes them (its replies are capped at 384 tokens).
_NOTES = ("Taking moments about the pivot: the 3 kg mass at 0.4 m gives 3 x 9.8 x 0.4 = 11.76 N m anticlockwise; "
          "the unknown mass m at 0.6 m must give the same moment clockwise, so m x 9.8 x 0.6 = 11.76 N m. ") * 6


def real_requests(shared_prefix: bool) -> list[dict[str, Any]]:
    """The request bodies of one `maps solve --model local` of examples/lever, every step's
    reply scripted (a scripted server stands in for the embedded one, so no model runs): in the
    shared-prefix layout (`shared_prefix`, every endpoint's default), or in the paper's."""
    import contextlib
    import io
    import tempfile
    from types import SimpleNamespace
    from unittest import mock

    import maps_autogen.model.local._server as local_server
    from maps_autogen.cli import main as maps_main
    from maps_autogen.orchestration._chat import MapsChat
    from tests.helpers.common import critic_json, solver_json
    from tests.helpers.fake_openai import FakeOpenAI, RoleScript

    script = RoleScript({"solver": [solver_json("B")], "critic": [critic_json(5, 5, 3, 5, worst="knowledge"),
                                                                  critic_json()]}, default=_NOTES)
    with FakeOpenAI(script) as server, tempfile.TemporaryDirectory() as runs, \
            mock.patch.object(local_server, "shared_local_server", lambda settings: SimpleNamespace(
                base_url=server.base_url, api_key="local-no-key", ensure_alive=lambda: None)), \
            mock.patch.object(MapsChat, "_shared_prefix", lambda self, role: shared_prefix):
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # its answer is no figure
                maps_main(["solve", "--problem", str(ROOT / "examples/lever/problem.yaml"), "--model", "local",
                           "--quiet", "--runs-dir", runs])
        except SystemExit as done:
            if done.code:
                raise RuntimeError(f"maps solve against the scripted server failed ({done.code})") from None
        return [request.body for request in server.received]


def _shortened(body: dict[str, Any], characters: int) -> dict[str, Any]:
    """`body` with its last message cut to `characters` (a small call for --short)."""
    messages = [dict(message) for message in body["messages"]]
    if isinstance(messages[-1]["content"], str):
        messages[-1]["content"] = messages[-1]["content"][:characters]
    return {**body, "messages": messages}


def _prompt_pass(bench: Bench, bodies: list[dict[str, Any]]) -> dict[str, float]:
    """Send `bodies` in order, each right after the one before (as a solve does), each replying
    with one token: prompt tokens, those llama.cpp took from its cache, and the prompt time."""
    http = bench.server.http_client()
    totals = {"prompt": 0.0, "cached": 0.0, "evaluated": 0.0, "ms": 0.0}
    for body in bodies:
        request = {**body, "model": bench.server.model_name, "max_tokens": 1, "stream": False}
        request.pop("response_format", None)  # constrained decoding changes nothing in the prompt's cost
        request.pop("stream_options", None)
        reply = http.post(f"{bench.server.base_url}/chat/completions", json=request,
                          headers={"Authorization": f"Bearer {bench.server.api_key}"})
        reply.raise_for_status()
        data = reply.json()
        timings = data.get("timings", {})
        totals["prompt"] += data["usage"]["prompt_tokens"]
        totals["cached"] += timings.get("cache_n", 0)
        totals["evaluated"] += timings.get("prompt_n", 0)
        totals["ms"] += timings.get("prompt_ms", 0.0)
    return totals


def _unrelated(bench: Bench) -> None:
    """One call with an unrelated prompt: the server's cache then holds nothing of a problem."""
    _prompt_pass(bench, [{"messages": [{"role": "user", "content": "What is the unit of force?"}]}])


def measure_prompt(bench: Bench) -> list[Figure]:
    """Prompt speed on a real problem's requests: each step's request once with the cache
    emptied (uncached), then the steps in order as a solve sends them (cached: llama.cpp reuses
    the prefix the request shares with the one before), in the shared-prefix layout and in the
    paper's."""
    figures = []
    layouts = [("shared-prefix layout", True), ("paper layout", False)]
    for layout, shared in layouts[:1] if bench.short else layouts:
        bodies = real_requests(shared)
        if bench.short:
            bodies = [_shortened(body, 400) for body in bodies[1:3]]
        uncached = {"prompt": 0.0, "evaluated": 0.0, "ms": 0.0}
        if shared and not bench.short:
            for body in bodies:
                _unrelated(bench)
                one = _prompt_pass(bench, [body])
                for key in uncached:
                    uncached[key] += one[key]
            figures.append(Figure("prompt speed, uncached", round(1000 * uncached["evaluated"] / uncached["ms"], 1),
                                  "tokens/s", f"{len(bodies)} real requests of {uncached['prompt'] / len(bodies):.0f} "
                                  "prompt tokens on average, each after an unrelated one"))
        _unrelated(bench)
        solve = _prompt_pass(bench, bodies)
        seconds = solve["ms"] / 1000
        figures.append(Figure(f"prompt of one solve, {layout}", round(seconds, 1), "s",
                              f"{len(bodies)} requests, {solve['prompt']:.0f} prompt tokens, "
                              f"{solve['cached']:.0f} from the cache ({solve['cached'] / solve['prompt']:.0%}), "
                              f"{solve['evaluated']:.0f} read at "
                              f"{solve['evaluated'] / max(seconds, 1e-9):.1f} tokens/s"))
    return figures


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
    ("prompt", measure_prompt),
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
    parser.add_argument("--short", action="store_true",
                        help="CI: only the prompt measurement, on two small calls (checks the script runs)")
    args = parser.parse_args(argv)
    if args.short:
        args.skip = [name for name, _ in MEASUREMENTS if name != "prompt"]

    bench = Bench(LocalModelSettings(n_threads=args.threads, n_ctx=args.n_ctx), replies=args.replies,
                  solves=args.solves, short=args.short)
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
