"""Throughput, CPU and start-up of `maps eval` beside a bare client making the same calls.

A fake model service (aiohttp, in its own process, never the bottleneck) answers every call after
`--latency` seconds and records the request bodies. `maps eval custom` runs as a real subprocess
(`.venv/bin/maps`) on a generated benchmark (one image per problem, the problem's tag in its
question), so its start-up counts. A bare client (aiohttp, also a subprocess) then sends exactly the
bodies `maps` sent: the same calls per problem, one after another, with the same concurrency. Each
figure is the median (min-max) over `--rounds` interleaved rounds (maps, bare client, maps, ...):

- problems/s at each `--concurrency` (default 32 and 128) with `--latency` 0.5 s calls, as a
  fraction of the ideal (the same calls with zero overhead and no start-up) and of the bare
  client's rate;
- CPU per problem at concurrency 1 (the service answering at once), `maps` against the bare client:
  whole processes (every worker process counted: `getrusage(RUSAGE_CHILDREN)`), and after start-up
  (the process tree's CPU when the first request arrived subtracted);
- time from process start to the first request (the parent notes the spawn, the service the
  first request's arrival);
- prompt tokens per problem for MAPS against a naive broadcasting group chat, counted by
  `maps_autogen.model._tokens.METHOD` from the transcripts (skip: --skip-tokens).

    .venv/bin/python perf/throughput.py                      # 1,000 problems at 32 and 128, 3 rounds
    .venv/bin/python perf/throughput.py --workers 4          # passes --workers 4 to maps eval
    .venv/bin/python perf/throughput.py --short              # seconds: small sizes, figures not meaningful
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _service import serve_until_stdin_closes, spawn_service, stop_service

ROOT = Path(__file__).resolve().parents[1]
MAPS = Path(sys.executable).with_name("maps")
TAG = re.compile(rb"\[q:(\d+)\]")  # every request of a problem carries its question, so its tag
GPT_4O_PROMPT_USD_PER_MILLION = 2.50
CRITIC_REPLY = json.dumps({"scores": {"caption": 5, "alignment": 5, "knowledge": 5, "solution": 5},
                           "need_feedback": False, "worst_step": "solution",
                           "feedback": {name: "" for name in ("caption", "alignment", "knowledge", "solution")}})
SOLVER_REPLY = json.dumps({"process": {"Phase 1": "read", "Phase 2": "add"}, "final_answer": "2"})
NOTES_REPLY = "lorem ipsum dolor " * 160  # about 700 tokens, a real role's reply


# ----- the fake model service (`throughput.py _serve`) ------------------------------------------------


def tree_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process and its living descendants so far (from /proc)."""
    ticks, stack, found = 0, [pid], False
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
            found = True
            for task in os.listdir(f"/proc/{current}/task"):
                stack += [int(child) for child in Path(f"/proc/{current}/task/{task}/children").read_text().split()]
        except (OSError, IndexError, ValueError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK") if found else None


def serve() -> None:
    """The fake service: prints its port, answers chat completions, and is steered by the parent
    through /_reset, /_watch and /_save."""
    from aiohttp import web

    state: dict[str, Any] = {"latency": 0.0, "record": False, "log": [], "first_at": None, "watch": None,
                             "cpu_at_first": None}

    async def complete(request: web.Request) -> web.Response:
        arrived = time.time()
        if state["first_at"] is None:
            state["first_at"] = arrived
            if state["watch"] is not None:
                state["cpu_at_first"] = tree_cpu_seconds(state["watch"])
        body = await request.read()
        role = request.headers.get("X-Maps-Role", "")
        found = TAG.search(body)
        if state["record"]:
            headers = {key: value for key, value in request.headers.items()
                       if key.lower() in ("content-type", "authorization", "x-maps-role")}
            state["log"].append({"pid": int(found.group(1)) if found else None, "path": request.path,
                                 "headers": headers, "body": body.decode()})
        sent = json.loads(body)
        if sent.get("stream"):
            return web.json_response({"error": {"message": "the fake service does not stream"}}, status=400)
        if state["latency"]:
            await asyncio.sleep(state["latency"])
        # The notes carry the problem's tag on, for the steps that see only earlier steps' notes.
        tag = found.group(0).decode() if found else ""
        content = SOLVER_REPLY if role == "solver" else CRITIC_REPLY if role == "critic" else f"{tag} {NOTES_REPLY}"
        prompt_tokens, completion_tokens = len(body) // 4, len(content) // 4
        return web.json_response({
            "id": "chatcmpl-perf", "object": "chat.completion", "created": int(arrived),
            "model": sent.get("model", "m"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    async def reset(request: web.Request) -> web.Response:
        state.update(latency=float(request.query["latency"]), record=request.query.get("record") == "1", log=[],
                     first_at=None, watch=None, cpu_at_first=None)
        return web.json_response({})

    async def watch(request: web.Request) -> web.Response:
        state["watch"] = int(request.query["pid"])
        return web.json_response({})

    async def save(request: web.Request) -> web.Response:
        if "path" in request.query:
            with open(request.query["path"], "w") as handle:
                handle.writelines(json.dumps(entry) + "\n" for entry in state["log"])
        calls: dict[str, int] = {}
        for entry in state["log"]:
            calls[str(entry["pid"])] = calls.get(str(entry["pid"]), 0) + 1
        return web.json_response({"first_at": state["first_at"], "cpu_at_first": state["cpu_at_first"],
                                  "calls": calls})

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/chat/completions", complete)
    app.router.add_post("/_reset", reset)
    app.router.add_post("/_watch", watch)
    app.router.add_post("/_save", save)
    serve_until_stdin_closes(app)


# ----- the bare client (`throughput.py _bare BODIES URL CONCURRENCY`) ---------------------------------


def bare_client(bodies: Path, base: str, concurrency: int) -> None:
    """Sends the recorded calls: problems in order, each problem's calls one after another, at
    most `concurrency` problems at once; each request serialised and each reply parsed, as a
    client does."""
    import aiohttp

    problems: dict[Any, list[dict[str, Any]]] = {}
    for line in bodies.read_text().splitlines():
        entry = json.loads(line)
        problems.setdefault(entry["pid"], []).append({**entry, "body": json.loads(entry["body"])})
    queue = list(problems.values())[::-1]

    async def run() -> None:
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def worker() -> None:
                while queue:
                    for call in queue.pop():
                        data = json.dumps(call["body"]).encode()
                        async with session.post(base + call["path"], data=data, headers=call["headers"]) as reply:
                            assert reply.status == 200, await reply.text()
                            json.loads(await reply.read())

            await asyncio.gather(*(worker() for _ in range(concurrency)))

    asyncio.run(run())


# ----- the benchmark -------------------------------------------------------------------------------


class Service:
    """The fake service's process, steered over HTTP."""

    def __init__(self) -> None:
        self.process, self.base = spawn_service(__file__, "_serve")

    def call(self, path: str) -> dict[str, Any]:
        request = urllib.request.Request(self.base + path, data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=60) as reply:
            return dict(json.loads(reply.read()))

    def close(self) -> None:
        stop_service(self.process)


@dataclass
class Run:
    wall: float  # spawn to exit
    cpu: float  # the process and every child it waited for
    first_request: float  # spawn to the first request's arrival
    cpu_at_first: float | None  # the process tree's CPU when the first request arrived
    calls: list[int]  # per problem, in problem order


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(service: Service, command: list[str], *, latency: float, record: bool, cwd: Path,
          env: dict[str, str] | None = None, save: Path | None = None) -> Run:
    """Runs `command` against a reset service; its wall time, CPU and first request."""
    service.call(f"/_reset?latency={latency}&record={int(record)}")
    cpu_before = children_cpu()
    spawned, started = time.time(), time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    service.call(f"/_watch?pid={process.pid}")
    out, err = process.communicate()
    wall = time.monotonic() - started
    cpu = children_cpu() - cpu_before
    if process.returncode != 0:
        name = f"{Path(command[0]).name} {' '.join(command[1:3])}"
        sys.exit(f"{name} exited {process.returncode}: {(err or out)[-2000:]}")
    stats = service.call("/_save" + (f"?path={save}" if save else ""))
    if record and "None" in stats["calls"]:
        sys.exit(f"{stats['calls']['None']} requests named no problem: the fake service cannot tell which problem "
                 f"they belong to (saved in {save})")
    calls = [count for _, count in sorted(stats["calls"].items(), key=lambda item: int(item[0]))] if record else []
    return Run(wall, cpu, stats["first_at"] - spawned, stats["cpu_at_first"], calls)


def write_benchmark(folder: Path, problems: int, size: tuple[int, int]) -> Path:
    """A custom benchmark (docs/benchmarks.md) of `problems` rows, each with its own image."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.helpers.common import make_png  # (imported here: the fake service runs this file too)

    (folder / "images").mkdir(parents=True)
    rows = []
    for number in range(1, problems + 1):
        make_png(folder / "images" / f"{number}.png", size=size, mark=number)  # each image differs
        rows.append({"id": str(number), "question": f"[q:{number}] What is 1 + 1?", "image": f"images/{number}.png",
                     "answer": 2})
    data = folder / "bench.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return data


def ideal_seconds(calls_per_problem: Sequence[int], concurrency: int, latency: float) -> float:
    """The makespan of the same calls with zero overhead and no start-up: C workers take problems
    in order, each problem's calls one after another, each taking exactly `latency`."""
    workers = [0.0] * concurrency
    for calls in calls_per_problem:
        heapq.heappush(workers, heapq.heappop(workers) + calls * latency)
    return max(workers)


def spread(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """median (min-max), or the value alone when there is one."""
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def count_tokens(eval_dir: Path, sample: int) -> tuple[float, float, int]:
    """Prompt tokens per problem, MAPS's requests against a naive broadcasting group chat (every
    agent sent the whole history), both from the transcripts and counted by tokens.METHOD."""
    from PIL import Image

    from maps_autogen.model._tokens import prompt_tokens
    from maps_autogen.records._chat_records import MessageRecord
    from maps_autogen.records._run_files import read_result_rows, read_transcript
    from maps_autogen.settings._config import load_config
    from maps_autogen.settings._prompts import load_prompts

    loaded = load_config(cwd=eval_dir)
    prompts = load_prompts(loaded)
    steps = set(loaded.team.config.names)
    rows, _ = read_result_rows(eval_dir / "results.jsonl")
    rows = [row for row in rows if row.run_dir][:sample]
    maps_total = naive_total = 0
    for row in rows:
        run_dir = eval_dir / str(row.run_dir)
        sizes: dict[str, tuple[int, int]] = {}

        def size_of(part: dict[str, Any], run_dir: Path = run_dir,
                    sizes: dict[str, tuple[int, int]] = sizes) -> tuple[int, int]:
            name = part.get("file") or part.get("image_file") or ""
            if name not in sizes:
                with Image.open(run_dir / name) as image:
                    sizes[name] = image.size
            return sizes[name]

        history: list[dict[str, Any]] = []
        for record in read_transcript(run_dir):
            if not isinstance(record, MessageRecord):
                continue
            if record.role == "user_proxy":
                parts: list[dict[str, Any]] = [{"type": "text", "text": record.content}]
                parts += [{"type": "image_file", "file": name} for name in record.images or []]
                history.append({"role": "user", "name": record.agent, "content": parts})
                continue
            if record.role in steps:
                maps_total += prompt_tokens(record.request or [], image_size=size_of)
                system = prompts.system_message(record.role) + "\n\n" + prompts.roles[record.role].instruction
                naive_total += prompt_tokens([{"role": "system", "content": system}, *history], image_size=size_of)
            history.append({"role": "user", "name": record.agent, "content": record.content})
    return maps_total / len(rows), naive_total / len(rows), len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=1000, help="problems per run at each concurrency")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per call")
    parser.add_argument("--cpu-problems", type=int, default=200, help="problems of the CPU run at concurrency 1")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (min/median/max over them)")
    parser.add_argument("--image-size", default="1000x700", help="each problem's image (MathVista's typical)")
    parser.add_argument("--workers", type=int, default=None, help="passed to maps eval as --workers N")
    parser.add_argument("--token-sample", type=int, default=200, help="problems whose prompt tokens are counted")
    parser.add_argument("--skip-tokens", action="store_true")
    parser.add_argument("--short", action="store_true", help="seconds: a few problems, figures not meaningful")
    args = parser.parse_args()
    if args.short:
        args.problems, args.concurrency, args.latency, args.cpu_problems = 8, [4], 0.05, 4
        args.rounds, args.image_size, args.token_sample = 1, "64x48", 2
    width, height = (int(n) for n in args.image_size.lower().split("x"))
    work = Path(tempfile.mkdtemp(prefix="maps-throughput-"))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "MAPS_"))}
    service = Service()
    env.update(OPENAI_BASE_URL=service.base + "/v1", OPENAI_API_KEY="sk-benchmark-key")
    data = write_benchmark(work / "data", args.problems, (width, height))
    cpu_data = write_benchmark(work / "cpu-data", args.cpu_problems, (width, height))
    workers = ["--workers", str(args.workers)] if args.workers is not None else []
    runs = 0

    def maps_eval(bench: Path, concurrency: int, latency: float) -> tuple[Run, Path, Path]:
        nonlocal runs
        runs += 1
        folder, bodies = work / f"runs-{runs}", work / f"bodies-{runs}.jsonl"
        command = [str(MAPS), "eval", "custom", "--data", str(bench), "--concurrency", str(concurrency), "--no-cache",
                   "--quiet", "--runs-dir", str(folder), *workers]
        run = timed(service, command, latency=latency, record=True, cwd=work, env=env, save=bodies)
        return run, bodies, next(folder.glob("eval-*"))

    def bare(bodies: Path, concurrency: int, latency: float) -> Run:
        command = [sys.executable, __file__, "_bare", str(bodies), service.base, str(concurrency)]
        return timed(service, command, latency=latency, record=False, cwd=work)

    results: dict[Any, list[Run]] = {}
    eval_dir = None
    print(f"{args.problems} problems per run, {args.latency * 1000:.0f} ms per call, images {width}x{height}, "
          f"{args.rounds} round(s); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}"
          + (f"; maps eval --workers {args.workers}" if workers else ""), flush=True)
    try:
        for _ in range(args.rounds):
            for concurrency in args.concurrency:
                ours, bodies, eval_dir = maps_eval(data, concurrency, args.latency)
                results.setdefault(("maps", concurrency), []).append(ours)
                results.setdefault(("bare", concurrency), []).append(bare(bodies, concurrency, args.latency))
            ours, bodies, _ = maps_eval(cpu_data, 1, 0.0)
            results.setdefault(("maps", 1), []).append(ours)
            results.setdefault(("bare", 1), []).append(bare(bodies, 1, 0.0))
    finally:
        service.close()
        tokens = None
        if not args.skip_tokens and eval_dir is not None:
            tokens = count_tokens(eval_dir, args.token_sample)
        if os.environ.get("MAPS_PERF_KEEP") is None:
            shutil.rmtree(work, ignore_errors=True)

    for concurrency in args.concurrency:
        ours, theirs = results[("maps", concurrency)], results[("bare", concurrency)]
        ideal = args.problems / ideal_seconds(ours[0].calls, concurrency, args.latency)
        rates = [args.problems / run.wall for run in ours]
        bare_rates = [args.problems / run.wall for run in theirs]
        print(f"problems/s at concurrency {concurrency}: maps {spread(rates)}, bare client {spread(bare_rates)}, "
              f"ideal {ideal:.2f}; maps = {spread([rate / ideal for rate in rates], '{:.0%}')} of the ideal, "
              f"{spread([rate / other for rate, other in zip(rates, bare_rates)], '{:.0%}')} of the bare client "
              f"({statistics.mean(ours[0].calls):.2f} calls per problem; whole processes, start-up included)")
    ours, theirs = results[("maps", 1)], results[("bare", 1)]
    n = args.cpu_problems

    def per_problem(run: Run, after_startup: bool) -> float:
        return 1000 * (run.cpu - ((run.cpu_at_first or 0.0) if after_startup else 0.0)) / n

    for after, label in ((False, "whole process"), (True, "after the first request")):
        mine = [per_problem(run, after) for run in ours]
        other = [per_problem(run, after) for run in theirs]
        print(f"CPU per problem at concurrency 1 ({label}): maps {spread(mine, '{:.1f}')} ms, "
              f"bare client {spread(other, '{:.1f}')} ms = {spread([a / b for a, b in zip(mine, other)], '{:.1f}')}x "
              f"({n} problems, the service answering at once; every process counted)")
    starts = [run.first_request for key, group in results.items() if key[0] == "maps" for run in group]
    bare_starts = [run.first_request for key, group in results.items() if key[0] == "bare" for run in group]
    print(f"time to the first request: maps {spread(starts)} s, bare client {spread(bare_starts)} s "
          f"(process start to the request's arrival at the service)")
    print(f"peak RSS of one process (maps eval, bare client): "
          f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")
    if tokens is not None:
        from maps_autogen.model._tokens import METHOD

        maps_tokens, naive_tokens, sample = tokens
        usd = GPT_4O_PROMPT_USD_PER_MILLION / 1e6
        print(f"prompt tokens per problem over {sample} problems: MAPS {maps_tokens:.0f} vs naive broadcasting group "
              f"chat {naive_tokens:.0f} ({maps_tokens / naive_tokens - 1:+.0%}); at gpt-4o's "
              f"${GPT_4O_PROMPT_USD_PER_MILLION:.2f}/M: ${maps_tokens * usd:.4f} vs ${naive_tokens * usd:.4f} "
              f"per problem")
        print(f"  counted as: {METHOD}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["_serve"]:
        serve()
    elif sys.argv[1:2] == ["_bare"]:
        bare_client(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    else:
        main()
