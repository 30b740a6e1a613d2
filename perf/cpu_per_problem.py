"""CPU per problem and time to the first request of `maps eval`, beside a bare client sending
the same request bodies (a script that prints, not a test).

    .venv/bin/python perf/cpu_per_problem.py [--problems 50] [--short]

`maps eval mathvista --concurrency 1` runs as its own process against a scripted server (in this
process, answering at once). Printed:

- time to the first request: from starting the `maps` process to the server receiving its first
  request (interpreter start-up, imports, config, data loading); the bare client's beside it;
- CPU per problem of the `maps` process in steady state: from the first request of the first
  problem to the first request of the last one, over that many problems (at concurrency 1 the
  problems run one after another, each sending the same number of requests), beside a bare httpx
  client (its own process, its start-up left out) posting exactly the request bodies `maps` sent,
  one at a time (httpx encodes each body to JSON), and parsing each reply's JSON; their ratio
  (issue 27's target: at most 3x at concurrency 1). The bare client reads no image file: the
  bodies it is given already hold each image as a base64 data URL;
- CPU per problem from the first request to the process's exit: the steady figure plus the end
  of the run (results summary, Table 1, interpreter exit) spread over the problems, so it
  shrinks as --problems grows.

The API key is random, as a real one is: a key made of English words ("sk-...-problem") would
make the secret masking of every file write look for it in every text (a near-copy of a key is
masked, and its pieces would be found in every prompt).

--short runs 3 problems (CI: the script must run; its figures are not asserted).
Figures depend on what else the machine is doing: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.common import critic_json, make_png, solver_json  # noqa: E402
from tests.helpers.eval_fixtures import write_mathvista_jsonl  # noqa: E402
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply  # noqa: E402

# Replies of a realistic length (a role's notes are a few hundred tokens); every review passes.
NOTES = "notes on the problem: " + "the lever balances when the moments are equal. " * 40

# A key shaped like a real one (random characters), new for each run of the script.
API_KEY = "sk-proj-" + secrets.token_urlsafe(36)

BARE_CLIENT = r"""
import json, os, sys, time
started = time.monotonic()
import httpx
url, bodies_file = sys.argv[1], sys.argv[2]
bodies = [json.loads(line) for line in open(bodies_file, encoding="utf-8")]
headers = {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
with httpx.Client(timeout=60) as client:
    first = time.monotonic() - started
    cpu = time.process_time()
    for body in bodies:
        reply = client.post(url, json=body, headers=headers)
        reply.raise_for_status()
        reply.json()["choices"][0]["message"]["content"]
    cpu = time.process_time() - cpu
print(json.dumps({"cpu": cpu, "first": first}))
"""


def cpu_seconds_of(pid: int) -> float:
    """User + system CPU seconds a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Recorder:
    """The scripted server's script: answers each role at once, keeps every request body, and
    notes when the first request arrived and how much CPU the `maps` process had used by each
    request."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.pid: int | None = None
        self.first_at: float | None = None
        self.cpu_at_first: float | None = None
        self.cpu_at: list[float] = []  # the maps process's CPU seconds when each request arrived
        self._lock = threading.Lock()

    def __call__(self, request: Received) -> Reply:
        with self._lock:
            if self.first_at is None:
                self.first_at = time.monotonic()
            if self.pid is not None:
                self.cpu_at.append(cpu_seconds_of(self.pid))
                if self.cpu_at_first is None:
                    self.cpu_at_first = self.cpu_at[0]
            self.bodies.append(request.body)
        if request.role == "solver":
            return Reply(solver_json("2"))
        if request.role == "critic":
            return Reply(critic_json(5, 5, 5, 5))
        return Reply(NOTES)


def run_maps(work: Path, problems: int, base_url: str, recorder: Recorder,
             image_size: tuple[int, int]) -> dict[str, float]:
    """`maps eval` in its own process: seconds to its first request and CPU seconds after it."""
    data, _ = write_mathvista_jsonl(work / "data", problems)
    for number in range(1, problems + 1):  # images of MathVista's typical size, each problem's its own
        make_png(work / "data" / "images" / f"{number}.png", size=image_size, mark=number)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MAPS_"))}
    env.update(OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=base_url)
    command = ["eval", "mathvista", "--data", str(data), "--concurrency", "1", "--no-cache", "--quiet",
               "--runs-dir", str(work / "runs")]
    started = time.monotonic()
    errors = open(work / "maps-stderr.txt", "w+", encoding="utf-8")  # a file: a full pipe would block maps
    process = subprocess.Popen([str(Path(sys.executable).parent / "maps"), *command], cwd=work, env=env,
                               stdout=subprocess.DEVNULL, stderr=errors, text=True)
    recorder.pid = process.pid
    _, status, usage = os.wait4(process.pid, 0)
    recorder.pid = None  # the bare client's requests come next
    process.returncode = os.waitstatus_to_exitcode(status)
    errors.close()
    if process.returncode != 0:
        text = (work / "maps-stderr.txt").read_text(encoding="utf-8", errors="replace")
        raise SystemExit(f"maps eval failed ({process.returncode}): {text[-2000:]}")
    if recorder.first_at is None or recorder.cpu_at_first is None:
        raise SystemExit("maps eval sent no request")
    total = usage.ru_utime + usage.ru_stime
    figures = {"first": recorder.first_at - started, "cpu": total - recorder.cpu_at_first, "total_cpu": total}
    per_problem, uneven = divmod(len(recorder.cpu_at), problems)
    if problems > 1 and not uneven:  # the first request of the first problem to that of the last
        figures["steady"] = (recorder.cpu_at[(problems - 1) * per_problem] - recorder.cpu_at[0]) / (problems - 1)
    return figures


def run_bare_client(work: Path, base_url: str, bodies: list[dict[str, Any]]) -> dict[str, float]:
    """A bare httpx client in its own process posting `bodies`: its CPU for them, and its start-up."""
    bodies_file = work / "bodies.jsonl"
    bodies_file.write_text("".join(json.dumps(body) + "\n" for body in bodies), encoding="utf-8")
    result = subprocess.run([sys.executable, "-c", BARE_CLIENT, f"{base_url}/chat/completions", str(bodies_file)],
                            capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": API_KEY})
    if result.returncode != 0:
        raise SystemExit(f"the bare client failed: {result.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=50)
    parser.add_argument("--short", action="store_true", help="3 problems: checks the script runs (CI)")
    parser.add_argument("--image-size", default="1000x700", help="the problems' image size (MathVista's typical)")
    args = parser.parse_args(argv)
    problems = 3 if args.short else args.problems
    width, height = (int(n) for n in args.image_size.lower().split("x"))
    recorder = Recorder()
    with tempfile.TemporaryDirectory(prefix="maps-cpu-per-problem-") as folder, FakeOpenAI(recorder) as server:
        work = Path(folder)
        ours = run_maps(work, problems, server.base_url, recorder, (width, height))
        bodies = list(recorder.bodies)
        bare = run_bare_client(work, server.base_url, bodies)
    ours_ms, bare_ms = 1000 * ours["cpu"] / problems, 1000 * bare["cpu"] / problems
    print(f"maps eval mathvista, {problems} problems at concurrency 1 (images {width}x{height}), "
          f"{len(bodies)} requests ({len(bodies) / problems:.1f} per problem), the server answering at once; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"time to the first request: maps {ours['first']:.2f} s, bare client {bare['first']:.2f} s")
    if "steady" in ours:
        steady_ms = 1000 * ours["steady"]
        print(f"CPU per problem in steady state: maps {steady_ms:.1f} ms, bare client {bare_ms:.1f} ms "
              f"(same request bodies): {steady_ms / bare_ms:.1f}x  (the CPU clock ticks "
              f"every 10 ms: ±{20 / (problems - 1):.1f} ms)")
    print(f"CPU per problem after the first request: maps {ours_ms:.1f} ms, bare client {bare_ms:.1f} ms "
          f"(same request bodies): {ours_ms / bare_ms:.1f}x (the end of the run included)")
    print(f"CPU of the whole maps process: {ours['total_cpu']:.2f} s")


if __name__ == "__main__":
    main()
