"""Throughput, own cost, tokens and memory of `maps eval` against a local fake model service.

The fake service (a subprocess) answers after a fixed latency. Every third problem's first
answer is scored low, so it rolls back once; the Interpreter, which sees only the image, knows
its problem by the image's hash. Prints:

- at --latency 0: milliseconds per problem of our own time (wall time one at a time, median and
  mean, and our process's CPU time), the service answering at once;
- at a latency > 0: problems/s against a zero-overhead simulation of the same run (the same
  problems with the same number of calls each, C workers, every call taking exactly the latency);
- requests per problem; prompt tokens per problem for MAPS and for a naive broadcasting group
  chat (every agent sees the whole history), both counted by `maps_autogen.tokens.METHOD` (the
  method is printed) and priced at gpt-4o's rates;
- CPU milliseconds per model call of our client beside the `openai` SDK's, on the same service;
- AG2 agent sets built, per worker thread (reuse: one each);
- peak RSS after 1,000 problems and at the end.

    .venv/bin/python perf/throughput.py --problems 200 --concurrency 1 --latency 0
    .venv/bin/python perf/throughput.py --problems 500 --concurrency 32 --latency 0.5
    .venv/bin/python perf/throughput.py --problems 5000 --concurrency 8 --latency 0 --skip-tokens
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = r"""
import base64, hashlib, json, re, sys, threading, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.conftest import critic_json, solver_json
from tests.fake_openai import FakeOpenAI, Reply
latency = float(sys.argv[2])
# The Interpreter sees only the image: it knows the problem by the image's hash.
pid_of_image = {hashlib.sha256(path.read_bytes()).hexdigest(): int(path.stem)
                for path in Path(sys.argv[3]).glob("*.png")}
tag = re.compile(r"\[q:(\d+)\]")
def problem_of(request):
    found = tag.search(request.user_text())
    if found:
        return int(found.group(1))
    for url in request.image_urls():
        digest = hashlib.sha256(base64.b64decode(url.partition(",")[2])).hexdigest()
        if digest in pid_of_image:
            return pid_of_image[digest]
    return None
reviews = {}
reviews_lock = threading.Lock()
def script(request):
    if latency:
        time.sleep(latency)
    role = request.role
    pid = problem_of(request)
    if pid is None:
        return Reply("the benchmark's service cannot tell which problem this is", status=400)
    if role == "solver":
        return Reply(solver_json("2"))
    if role == "critic":
        # Every third problem gets one rollback (to the Solver), as real runs do: its first
        # review scores the solution low, the review after the rollback passes.
        with reviews_lock:
            reviews[pid] = reviews.get(pid, 0) + 1
            first_review = reviews[pid] == 1
        return Reply(critic_json(5, 5, 5, 3 if pid % 3 == 0 and first_review else 5))
    # About 700 tokens, the length of a real role's reply; it carries the problem's tag on.
    return Reply(f"{role} notes on [q:{pid}]: " + "lorem ipsum dolor " * 160)
with FakeOpenAI(script) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""
GPT_4O_PROMPT_USD_PER_MILLION = 2.50


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds_of(pid: int) -> float:
    """User + system CPU seconds a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_data(folder: Path, problems: int, image_size: tuple[int, int]) -> Path:
    """MathVista-format problems with images of a realistic size (each problem's image differs)."""
    from tests.conftest import make_png
    from tests.eval_fixtures import write_mathvista_jsonl

    data, _ = write_mathvista_jsonl(folder, problems)
    for number in range(1, problems + 1):
        make_png(folder / "images" / f"{number}.png", size=image_size, mark=number)
    return data


class AgentBuilds:
    """Counts the AG2 agent sets `maps eval` builds, per thread: reuse means one per worker."""

    def __init__(self) -> None:
        from maps_autogen.chat import ChatAgents

        self.by_thread: dict[int, int] = {}  # thread id -> agent sets built on it
        build = ChatAgents.__init__
        lock = threading.Lock()

        def counted(agents: Any, *args: Any, **kwargs: Any) -> None:
            with lock:
                thread = threading.get_ident()
                self.by_thread[thread] = self.by_thread.get(thread, 0) + 1
            build(agents, *args, **kwargs)

        ChatAgents.__init__ = counted  # the benchmark observes the builds; it changes nothing they do


def simulated_seconds(calls_per_problem: list[int], concurrency: int, latency: float) -> float:
    """The makespan of the same run with zero overhead: C workers take problems in order, each
    problem's calls are sequential and take exactly `latency`."""
    workers = [0.0] * concurrency
    for calls in calls_per_problem:
        start = heapq.heappop(workers)
        heapq.heappush(workers, start + calls * latency)
    return max(workers)


class Watcher:
    """Samples RSS twice a second and notes the peak RSS when the 1,000th result is written."""

    def __init__(self, results: Path, mark: int = 1000):
        self.results = results
        self.mark = mark
        self.done_lines = 0
        self.rss_at_mark: float | None = None
        self.samples: list[float] = []
        self.progress: list[tuple[int, float]] = []  # (results written, CPU seconds of this process)
        self.peaks: list[tuple[int, float]] = []  # (results written, peak RSS so far)
        self._offset = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _count(self) -> None:
        if not self.results.is_file():
            return
        with open(self.results, "rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        self._offset += len(chunk)
        self.done_lines += chunk.count(b"\n")

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.samples.append(rss_mb())
            self._count()
            self.progress.append((self.done_lines, time.process_time()))
            self.peaks.append((self.done_lines, peak_rss_mb()))
            if self.rss_at_mark is None and self.done_lines >= self.mark:
                self.rss_at_mark = peak_rss_mb()

    def steady_cpu_per_problem(self) -> float | None:
        """CPU seconds of this process per problem while problems were finishing (start-up,
        data loading and the final summary left out)."""
        running = ([(done, cpu) for done, cpu in self.progress if 0 < done < self.progress[-1][0]]
                   if self.progress else [])
        if len(running) < 2 or running[-1][0] == running[0][0]:
            return None
        return (running[-1][1] - running[0][1]) / (running[-1][0] - running[0][0])

    def peak_while_running(self, total: int) -> float | None:
        """Peak RSS at the last sample before the last problem finished (so before the run's
        final compaction and summary)."""
        running = [peak for done, peak in self.peaks if done < total]
        return running[-1] if running else None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def count_tokens(eval_dir: Path, records: list[dict[str, Any]], sample_size: int) -> tuple[float, float]:
    """Prompt tokens per problem, MAPS views against a naive broadcasting group chat, both from
    the transcripts and counted by tokens.METHOD."""
    from PIL import Image

    from maps_autogen.config import load_config
    from maps_autogen.prompts import load_prompts
    from maps_autogen.tokens import prompt_tokens
    from maps_autogen.transcript import read_transcript

    loaded = load_config(cwd=eval_dir)
    prompts = load_prompts(loaded)
    role_names = set(loaded.team.config.names)
    maps_total = naive_total = 0
    for record in records[:sample_size]:
        run_dir = eval_dir / record["run_dir"]
        sizes: dict[str, tuple[int, int]] = {}

        def size_of(part: dict[str, Any], run_dir: Path = run_dir,
                    sizes: dict[str, tuple[int, int]] = sizes) -> tuple[int, int]:
            name = part.get("file") or part.get("image_file") or ""
            if name not in sizes:
                with Image.open(run_dir / name) as image:
                    sizes[name] = image.size
            return sizes[name]

        # A naive AG2 group chat: each agent's system message is its prompt, and it is sent the
        # whole history: the problem with its image(s), then every earlier reply, by name.
        history: list[dict[str, Any]] = []
        for entry in read_transcript(run_dir):
            if entry.get("type") != "message":
                continue
            if entry["role"] == "user_proxy":
                parts = [{"type": "text", "text": entry.get("content") or ""}]
                parts += [{"type": "image_file", "file": name} for name in entry.get("images") or []]
                history.append({"role": "user", "name": entry["agent"], "content": parts})
                continue
            if entry["role"] in role_names:
                maps_total += prompt_tokens(entry.get("request") or [], image_size=size_of)
                role = entry["role"]
                system = prompts.system_message(role) + "\n\n" + prompts.roles[role].instruction
                naive_total += prompt_tokens([{"role": "system", "content": system}, *history], image_size=size_of)
            history.append({"role": "user", "name": entry["agent"], "content": entry.get("content") or ""})
    return maps_total / sample_size, naive_total / sample_size


def cpu_per_call(base_url: str, request: list[dict[str, Any]], calls: int) -> tuple[float, float]:
    """CPU milliseconds of this process per call, our ChatBackend against the `openai` SDK, the
    same request sent one at a time to the same service."""
    import openai

    from maps_autogen.client import ChatBackend
    from maps_autogen.endpoints import ResolvedModel

    model = ResolvedModel(endpoint_name="bench", kind="openai", model="gpt-4o", base_url=base_url, timeout_s=60,
                          max_retries=0, json_mode="none", stream=False, temperature=None, max_tokens=None,
                          api_key="sk-benchmark-key")
    ours = ChatBackend(model)
    sdk = openai.OpenAI(base_url=base_url, api_key="sk-benchmark-key", max_retries=0)
    headers = {"X-Maps-Role": "aligner"}

    def measure(call: Any) -> float:
        for _ in range(min(20, calls)):  # warm up connections and caches
            call()
        start = time.process_time()
        for _ in range(calls):
            call()
        return 1000 * (time.process_time() - start) / calls

    ours_ms = measure(lambda: ours.complete(request, role="aligner"))
    sdk_ms = measure(lambda: sdk.chat.completions.create(model="gpt-4o", messages=request, extra_headers=headers))
    return ours_ms, sdk_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per call (0: measure our own time)")
    parser.add_argument("--image-size", default="1000x700", help="the problems' image size (MathVista's typical)")
    parser.add_argument("--token-sample", type=int, default=200, help="problems whose prompt tokens are counted")
    parser.add_argument("--cpu-calls", type=int, default=300, help="calls per client for the CPU comparison (0: skip)")
    parser.add_argument("--skip-tokens", action="store_true")
    args = parser.parse_args()
    width, height = (int(n) for n in args.image_size.lower().split("x"))

    from maps_autogen.config import load_config
    from maps_autogen.eval.runner import EvalRequest, EvalRun
    from maps_autogen.tokens import METHOD

    builds = AgentBuilds()
    work = Path(tempfile.mkdtemp(prefix="maps-throughput-"))
    data = write_data(work / "data", args.problems, (width, height))
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(ROOT), str(args.latency),
                               str(work / "data" / "images")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    base_url = server.stdout.readline().strip()
    env = {"OPENAI_API_KEY": "sk-benchmark-key", "OPENAI_BASE_URL": base_url}
    try:
        loaded = load_config(cwd=work)
        request = EvalRequest(benchmark="mathvista", data=data, concurrency=args.concurrency, cache=False,
                              runs_dir=work / "runs")
        run = EvalRun(request, loaded, progress=False, env=env)
        watcher = None
        startup = 0.0
        cpu_start, wall_start = time.process_time(), time.monotonic()
        # The watcher needs the eval folder, which the run names when it starts: find it as it appears.
        result: dict[str, Any] = {}
        runner = threading.Thread(target=lambda: result.setdefault("outcome", run.run()))
        runner.start()
        while runner.is_alive() and watcher is None:
            folders = list((work / "runs").glob("eval-*"))
            if folders:
                startup = time.monotonic() - wall_start  # the folder appears once the data is loaded
                watcher = Watcher(folders[0] / "results.jsonl")
                watcher.start()
            time.sleep(0.01)
        runner.join()
        wall = time.monotonic() - wall_start
        peak_after_run = peak_rss_mb()
        cpu = time.process_time() - cpu_start
        service_cpu = cpu_seconds_of(server.pid)
        if watcher is not None:
            watcher.stop()
        outcome = result["outcome"]
        records = [json.loads(line) for line in (outcome.eval_dir / "results.jsonl").read_text().splitlines()]
        ours_ms = sdk_ms = None
        if args.cpu_calls and args.latency == 0:
            transcript = (outcome.eval_dir / records[0]["run_dir"] / "transcript.jsonl").read_text().splitlines()
            aligner = next(json.loads(line) for line in transcript if json.loads(line).get("role") == "aligner")
            ours_ms, sdk_ms = cpu_per_call(base_url, aligner["request"], args.cpu_calls)
    finally:
        server.stdin.close()
        server.wait(timeout=30)

    failed = [r for r in records if r["status"] != "ok"]
    calls_per_problem = [r["usage"]["calls"] for r in records]
    calls = sum(calls_per_problem)
    rollbacks = sum(1 for r in records if r["rollbacks"])
    print(f"problems: {len(records)} ({len(failed)} failed), concurrency {args.concurrency}, "
          f"service latency {args.latency * 1000:.0f} ms/call, images {width}x{height}")
    print(f"requests per problem: {calls / len(records):.2f}; "
          f"problems with a rollback: {rollbacks} ({rollbacks / len(records):.0%})")
    print(f"AG2 agent sets built: {sum(builds.by_thread.values())} on {len(builds.by_thread)} worker threads "
          f"for {len(records)} problems "
          f"(most on one thread: {max(builds.by_thread.values(), default=0)})")
    if args.latency == 0:
        seconds = [r["seconds"] for r in records]
        print(f"own time per problem: {1000 * statistics.median(seconds):.1f} ms median, "
              f"{1000 * statistics.mean(seconds):.1f} ms mean "
              f"(each problem's wall time, the service answering at once; it includes reading and decoding the "
              f"problem's image and the service's own work); "
              f"whole run {1000 * wall / len(records):.1f} ms wall and {1000 * cpu / len(records):.1f} ms CPU "
              f"of this process per problem")
        steady = watcher.steady_cpu_per_problem() if watcher else None
        if steady is not None:
            print(f"CPU of this process per problem while problems finish (start-up and summary left out): "
                  f"{1000 * steady:.1f} ms")
    else:
        ideal = simulated_seconds(calls_per_problem, args.concurrency, args.latency)
        print(f"throughput: {len(records) / wall:.2f} problems/s; "
              f"zero-overhead simulation of the same run: {len(records) / ideal:.2f}; "
              f"ratio {ideal / wall:.1%} (whole run: {wall:.1f} s, of which {startup:.1f} s loading the data "
              f"before the first "
              f"problem; {ideal / (wall - startup):.1%} from the first problem on)")
        overhead_ms = 1000 * statistics.mean(r["seconds"] - r["usage"]["calls"] * args.latency for r in records)
        print(f"overhead per problem: {overhead_ms:.1f} ms (problem wall time minus the service's latency)")
    print(f"CPU per model call: {1000 * cpu / calls:.2f} ms in this process "
          f"(the whole run: orchestration, HTTP, files, scoring), "
          f"{1000 * service_cpu / calls:.2f} ms in the fake service; "
          f"load average {Path('/proc/loadavg').read_text().split()[0]} "
          f"on {os.cpu_count()} cores")
    if ours_ms is not None:
        print(f"CPU per call, one Aligner request sent {args.cpu_calls} times: our client {ours_ms:.2f} ms, "
              f"openai SDK {sdk_ms:.2f} ms")
    if not args.skip_tokens:
        sample = min(args.token_sample, len(records))
        maps_tokens, naive_tokens = count_tokens(outcome.eval_dir, records, sample)
        usd = GPT_4O_PROMPT_USD_PER_MILLION / 1e6
        print(f"prompt tokens per problem over {sample} problems: MAPS {maps_tokens:.0f} "
              f"vs naive broadcasting group chat {naive_tokens:.0f} ({maps_tokens / naive_tokens - 1:+.0%}); "
              f"at gpt-4o's ${GPT_4O_PROMPT_USD_PER_MILLION:.2f}/M: "
              f"${maps_tokens * usd:.4f} vs ${naive_tokens * usd:.4f} per problem")
        print(f"  counted as: {METHOD}")
    mark = f"{watcher.rss_at_mark:.0f} MB after 1,000 problems, " if watcher and watcher.rss_at_mark else ""
    running = watcher.peak_while_running(len(records)) if watcher else None
    last = f"{running:.0f} MB just before the last problem finished, " if running else ""
    samples = watcher.samples if watcher else []
    quarters = (", ".join(f"{samples[min(len(samples) - 1, len(samples) * k // 4)]:.0f}" for k in (1, 2, 3, 4))
                if samples else "-")
    print(f"peak RSS: {mark}{last}{peak_after_run:.0f} MB once the run ended "
          f"(after compacting results.jsonl and the summary); "
          f"RSS at 25/50/75/100% of the run: {quarters} MB")

if __name__ == "__main__":
    main()
