"""Throughput of `maps eval` against a local fake model service with a fixed latency.

Prints: problems/s and its ratio to the ideal C / (calls per problem x latency); orchestration
overhead per problem (wall time minus time spent waiting on the server); requests per problem;
prompt tokens per problem against a naive AG2 group chat in which every agent sees the whole
history; CPU milliseconds of our process per model call; peak RSS and RSS over the run.

    .venv/bin/python benchmarks/throughput.py --problems 1000 --concurrency 32 --latency 0.5
"""

from __future__ import annotations

import argparse
import base64
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = r"""
import json, re, sys, time
sys.path.insert(0, sys.argv[1])
from tests.conftest import critic_json, solver_json
from tests.fake_openai import FakeOpenAI, Reply
latency = float(sys.argv[2])
tag = re.compile(r"\[q:(\d+)\]")
def script(request):
    time.sleep(latency)
    role = request.role
    found = tag.search(request.user_text())
    pid = int(found.group(1)) if found else 0
    if role == "solver":
        return Reply(solver_json("2"))
    if role == "critic":
        # Every third problem gets one rollback (to the Solver), as real runs do.
        return Reply(critic_json(5, 5, 5, 3 if pid % 3 == 0 else 5))
    # About 700 tokens, the length of a real role's reply; it carries the problem's tag on.
    return Reply(f"{role} notes on [q:{pid}]: " + "lorem ipsum dolor " * 160)
with FakeOpenAI(script) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()

    from maps_autogen.config import load_config
    from maps_autogen.prompts import load_prompts
    from maps_autogen.roles import Role
    from maps_autogen.eval.runner import EvalRequest, EvalRun
    from maps_autogen.transcript import read_transcript
    from tests.eval_fixtures import write_mathvista_jsonl

    work = Path(tempfile.mkdtemp(prefix="maps-throughput-"))
    data, _ = write_mathvista_jsonl(work / "data", args.problems)
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(ROOT), str(args.latency)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    base_url = server.stdout.readline().strip()
    env = {"OPENAI_API_KEY": "sk-benchmark-key", "OPENAI_BASE_URL": base_url}
    samples: list[tuple[float, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.monotonic(), rss_mb()))
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        loaded = load_config(cwd=work)
        request = EvalRequest(benchmark="mathvista", data=data, concurrency=args.concurrency, cache=False, runs_dir=work / "runs")
        sampler.start()
        cpu_start, wall_start = time.process_time(), time.monotonic()
        outcome = EvalRun(request, loaded, progress=False, env=env).run()
        wall = time.monotonic() - wall_start
        cpu = time.process_time() - cpu_start
    finally:
        done.set()
        server.stdin.close()
        server.wait(timeout=10)

    records = [json.loads(line) for line in (outcome.eval_dir / "results.jsonl").read_text().splitlines()]
    calls = sum(r["usage"]["calls"] for r in records)
    per_problem_calls = calls / len(records)
    ideal = args.concurrency / (per_problem_calls * args.latency)
    throughput = len(records) / wall
    overhead_ms = 1000 * sum(r["seconds"] - r["usage"]["calls"] * args.latency for r in records) / len(records)
    # Split it: time outside model calls (the orchestration itself), and time inside calls
    # beyond the server's fixed latency (HTTP, the fake server's own work, waiting for the GIL).
    call_seconds = [sum(row["seconds"] for row in r["usage_by_role"].values()) for r in records]
    outside_ms = 1000 * sum(r["seconds"] - c for r, c in zip(records, call_seconds)) / len(records)
    transport_ms = 1000 * sum(c - r["usage"]["calls"] * args.latency for r, c in zip(records, call_seconds)) / len(records)
    prompt_tokens = sum(r["usage"]["prompt_tokens"] for r in records) / len(records)

    # A naive AG2 group chat gives each agent its prompt as the system message and sends it the
    # whole history: the problem with its image(s) and every earlier reply. Rebuild those
    # requests from our transcripts and count them with the characters/4 rule the fake server
    # uses for ours (which also counts image data that way).
    prompts = load_prompts(loaded)
    naive_tokens = 0
    sample_size = min(200, len(records))
    for record in records[:sample_size]:
        history: list[dict[str, str]] = []
        for entry in read_transcript(outcome.eval_dir / record["run_dir"]):
            if entry.get("type") != "message":
                continue
            if entry["role"] == "user_proxy":
                images = "".join(
                    "data:image/png;base64," + base64.b64encode((outcome.eval_dir / record["run_dir"] / name).read_bytes()).decode()
                    for name in entry.get("images") or []
                )
                history.append({"role": "user", "name": entry["agent"], "content": (entry.get("content") or "") + images})
                continue
            if entry["role"] in {role.value for role in Role}:
                role = Role(entry["role"])
                system = prompts.system_message(role) + "\n\n" + prompts.roles[role].instruction
                naive_tokens += len(json.dumps([{"role": "system", "content": system}, *history])) // 4
            history.append({"role": "user", "name": entry["agent"], "content": entry.get("content") or ""})
    naive_per_problem = naive_tokens / sample_size

    quarter = max(1, len(samples) // 4)
    print(f"problems: {len(records)}, concurrency {args.concurrency}, server latency {args.latency * 1000:.0f} ms/call")
    print(f"throughput: {throughput:.2f} problems/s; ideal {ideal:.2f}; ratio {throughput / ideal:.1%}")
    print(f"requests per problem: {per_problem_calls:.2f}")
    print(f"overhead per problem: {overhead_ms:.1f} ms (wall time minus server latency): {outside_ms:.1f} ms orchestration "
          f"outside model calls + {transport_ms:.1f} ms inside calls beyond the latency (HTTP, fake server, GIL)")
    print(f"prompt tokens per problem: {prompt_tokens:.0f} (MAPS views) vs {naive_per_problem:.0f} (naive group chat, whole history)")
    print(f"CPU of this process per model call: {1000 * cpu / calls:.2f} ms")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; RSS at 25/50/75/100% of the run: "
          + ", ".join(f"{samples[min(len(samples) - 1, quarter * k)][1]:.0f}" for k in (1, 2, 3, 4)) + " MB")


if __name__ == "__main__":
    main()
