"""CPU per problem and time to the first request of `maps eval`, beside a bare client sending
the same request bodies (a script that prints, not a test).

    .venv/bin/python perf/cpu_per_problem.py [--problems 50] [--short] [--profile] [--instructions]

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

Two more ways to look at the same steady state (the first request of the second problem to the
first request of the last; both need --problems 4 or more):

- --profile: `maps` under cProfile, each thread timed by its own CPU clock, switched on and off by
  the scripted server at those two requests (it waits for the process to say so before it
  answers): where the CPU per problem went, by module and by function (the profiler's own cost
  makes every figure larger; the shares are what to read), beside the CPU the process used over
  the same problems (/proc), which the profile's total never exceeds. A call still open when the
  profile is switched on or off (a thread waiting, the problem under way) is left out of it;
- --instructions: `maps` and then the bare client under valgrind's callgrind, counting
  instructions only between those two requests: instructions per problem and their ratio, a
  figure the machine's load does not change (about 30 s of start-up under valgrind, then about
  1 s a problem).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.common import critic_json, make_png, solver_json  # noqa: E402
from tests.helpers.eval_fixtures import write_mathvista_jsonl  # noqa: E402
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply  # noqa: E402

# Replies of a realistic length (a role's notes are a few hundred tokens); every review passes.
NOTES = "notes on the problem: " + "the lever balances when the moments are equal. " * 40

# The default team's five steps, each review passing (the switches are set at requests known in
# advance; checked after the run).
REQUESTS_PER_PROBLEM = 5

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


# `maps` under cProfile: every thread gets its own profiler (timed by that thread's CPU clock) at its
# first call after SIGUSR1; SIGUSR2 writes the merged statistics. Each signal is answered by a file,
# so the server (the `maps` process waiting for its reply) knows the switch is done.
PROFILED_MAPS = r"""
import cProfile, os, pstats, signal, sys, threading, time
out = sys.argv.pop(1)
sys.argv[0] = "maps"
profiles, local, on = [], threading.local(), threading.Event()
def start_in_thread(*_):
    if on.is_set() and getattr(local, "profile", None) is None:
        local.profile = cProfile.Profile(time.thread_time)
        profiles.append(local.profile)
        local.profile.enable()  # (in place of this hook, in this thread)
def start(*_):
    on.set()
    start_in_thread()
    open(out + ".on", "w").close()
class Taken:
    # A profile's statistics so far, taken without stopping it: stopping another thread's profile
    # from here would end the calls open in that thread (a wait, a recv) by this thread's clock.
    def __init__(self, profile):
        self.profile = profile
    def create_stats(self):
        self.profile.snapshot_stats()
        self.stats = self.profile.stats
def stop(*_):
    on.clear()
    local.profile.disable()  # (this thread's: its open calls end by its own clock)
    pstats.Stats(*map(Taken, profiles)).dump_stats(out + ".tmp")
    os.replace(out + ".tmp", out)
threading.setprofile(start_in_thread)  # the threads started from here on: the eval's workers
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
from maps_autogen.cli import main
sys.exit(main())
"""


class Switch:
    """Starts and stops what measures a process (a profiler, callgrind's instrumentation) at
    two of the requests it sends (their numbers in its own sequence, from 0)."""

    def __init__(self, start: int, stop: int):
        self.start, self.stop = start, stop

    def at(self, number: int, pid: int) -> None:
        """Called by the server on request `number` of process `pid`, before it answers."""
        if number in (self.start, self.stop):
            self.switch(pid, on=number == self.start)

    def switch(self, pid: int, *, on: bool) -> None:
        raise NotImplementedError


class ProfileSwitch(Switch):
    def __init__(self, start: int, stop: int, out: Path):
        super().__init__(start, stop)
        self.out = out

    def switch(self, pid: int, *, on: bool) -> None:
        os.kill(pid, signal.SIGUSR1 if on else signal.SIGUSR2)
        done = Path(f"{self.out}.on") if on else self.out
        deadline = time.monotonic() + 60
        while not done.exists():  # a file the process writes once it has switched (a poll: another process)
            if time.monotonic() > deadline:
                raise SystemExit(f"the profiled maps process did not answer the switch ({done})")
            time.sleep(0.001)


class CallgrindSwitch(Switch):
    def switch(self, pid: int, *, on: bool) -> None:
        # callgrind_control reaches the process through valgrind's gdbserver (vgdb), also while it
        # waits for this reply, and returns once the instrumentation is switched.
        result = subprocess.run(["callgrind_control", "--instr=" + ("on" if on else "off"), str(pid)],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise SystemExit(f"callgrind_control failed: {result.stdout[-500:]}{result.stderr[-500:]}")


def callgrind(out: Path) -> list[str]:
    """The command prefix that runs a program under callgrind, counting nothing until switched on."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", "--dump-instr=no",
            "--log-file=/dev/null"]


def instructions_in(out: Path) -> int:
    """The instructions a callgrind output file counted (its `totals:`; with the instrumentation
    switched off at the start, its `summary:` line says 0)."""
    for line in out.read_text(encoding="utf-8").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise SystemExit(f"{out} holds no instruction count")


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
        self.switch: Switch | None = None  # the profiler or callgrind, and the requests that switch it
        self.switched: int | None = None  # the process it switches (the maps process, then the bare client)
        self.numbered = 0  # that process's requests so far
        self._lock = threading.Lock()

    def __call__(self, request: Received) -> Reply:
        with self._lock:
            if self.first_at is None:
                self.first_at = time.monotonic()
            if self.pid is not None:
                self.cpu_at.append(cpu_seconds_of(self.pid))  # (before the switch: what switching costs is left out)
                if self.cpu_at_first is None:
                    self.cpu_at_first = self.cpu_at[0]
            self.bodies.append(request.body)
        if self.switch is not None and self.switched is not None:
            self.switch.at(self.numbered, self.switched)
            self.numbered += 1
        if request.role == "solver":
            return Reply(solver_json("2"))
        if request.role == "critic":
            return Reply(critic_json(5, 5, 5, 5))
        return Reply(NOTES)


def run_maps(work: Path, problems: int, base_url: str, recorder: Recorder, image_size: tuple[int, int],
             prefix: Sequence[str] = ()) -> dict[str, float]:
    """`maps eval` in its own process: seconds to its first request and CPU seconds after it.
    `prefix`: the command it runs under (the profiler's, valgrind)."""
    data, _ = write_mathvista_jsonl(work / "data", problems)
    for number in range(1, problems + 1):  # images of MathVista's typical size, each problem's its own
        make_png(work / "data" / "images" / f"{number}.png", size=image_size, mark=number)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MAPS_"))}
    env.update(OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=base_url)
    command = ["eval", "mathvista", "--data", str(data), "--concurrency", "1", "--no-cache", "--quiet",
               "--runs-dir", str(work / "runs")]
    started = time.monotonic()
    errors = open(work / "maps-stderr.txt", "w+", encoding="utf-8")  # a file: a full pipe would block maps
    maps = list(prefix) or [str(Path(sys.executable).parent / "maps")]
    process = subprocess.Popen([*maps, *command], cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=errors,
                               text=True)
    recorder.pid = recorder.switched = process.pid
    _, status, usage = os.wait4(process.pid, 0)
    recorder.pid = recorder.switched = None  # the bare client's requests come next
    recorder.numbered = 0
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


def run_bare_client(work: Path, base_url: str, bodies: list[dict[str, Any]], recorder: Recorder,
                    prefix: Sequence[str] = ()) -> dict[str, float]:
    """A bare httpx client in its own process posting `bodies`: its CPU for them, and its start-up."""
    bodies_file = work / "bodies.jsonl"
    bodies_file.write_text("".join(json.dumps(body) + "\n" for body in bodies), encoding="utf-8")
    process = subprocess.Popen([*prefix, sys.executable, "-c", BARE_CLIENT, f"{base_url}/chat/completions",
                                str(bodies_file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "OPENAI_API_KEY": API_KEY})
    recorder.switched, recorder.numbered = process.pid, 0
    out, errors = process.communicate()
    recorder.switched = None
    if process.returncode != 0:
        raise SystemExit(f"the bare client failed: {errors[-2000:]}")
    figures: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return figures


def where(filename: str) -> str:
    """What a profiled function belongs to: our module, a third-party package, a standard
    library module, or a built-in."""
    if filename.startswith("~"):
        return "built-ins"
    if "/maps_autogen/" in filename:
        return "maps_autogen/" + filename.split("/maps_autogen/", 1)[1]
    if "-packages/" in filename:
        return filename.split("-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    return "stdlib " + Path(filename).name


def print_profile(out: Path, problems: int) -> None:
    """The profile's top entries: own CPU time by module or package, then by function, and the
    functions that took the most including what they called (each in ms per problem)."""
    stats = pstats.Stats(str(out))
    entries: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    total = sum(own for _, _, own, _, _ in entries.values())
    print(f"profile of {problems} problems (cProfile, each thread's CPU clock, the profiler's own cost included): "
          f"{1000 * total / problems:.1f} ms per problem")
    by_place: Counter[str] = Counter()
    for (filename, _, _), (_, _, own, _, _) in entries.items():
        by_place[where(filename)] += own
    print("own time by module or package:")
    for place, own in by_place.most_common(20):
        print(f"  {1000 * own / problems:6.2f} ms {100 * own / total:4.1f}%  {place}")

    def name(key: tuple[str, int, str]) -> str:
        filename, line, function = key
        return function if filename.startswith("~") else f"{where(filename)}:{line}({function})"

    for title, column in (("own time", 2), ("cumulative time", 3)):
        print(f"functions by {title} (calls per problem):")
        ranked = sorted(entries.items(), key=lambda item: -item[1][column])
        for key, entry in ranked[:25]:
            print(f"  {1000 * entry[column] / problems:6.2f} ms {100 * entry[column] / total:5.1f}% "
                  f"{entry[1] / problems:7.1f}  {name(key)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=50)
    parser.add_argument("--short", action="store_true", help="3 problems: checks the script runs (CI)")
    parser.add_argument("--image-size", default="1000x700", help="the problems' image size (MathVista's typical)")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--profile", action="store_true", help="where the CPU per problem goes (cProfile)")
    modes.add_argument("--instructions", action="store_true",
                       help="instructions per problem under callgrind, maps and the bare client (needs valgrind)")
    args = parser.parse_args(argv)
    problems = 3 if args.short else args.problems
    if (args.profile or args.instructions) and problems < 4:
        parser.error("--profile and --instructions need --problems 4 or more")
    width, height = (int(n) for n in args.image_size.lower().split("x"))
    recorder = Recorder()
    with tempfile.TemporaryDirectory(prefix="maps-cpu-per-problem-") as folder, FakeOpenAI(recorder) as server:
        work = Path(folder)
        if args.profile or args.instructions:
            measured(work, problems, server.base_url, recorder, (width, height), profile=args.profile)
            return
        ours = run_maps(work, problems, server.base_url, recorder, (width, height))
        bodies = list(recorder.bodies)
        bare = run_bare_client(work, server.base_url, bodies, recorder)
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


def measured(work: Path, problems: int, base_url: str, recorder: Recorder, image_size: tuple[int, int], *,
             profile: bool) -> None:
    """--profile and --instructions: the steady state (the first request of the second problem to
    the first request of the last) profiled, or counted in instructions beside the bare client's."""
    steady = problems - 2  # the problems between the two switches
    ours = work / "maps.out"
    maps = [str(Path(sys.executable).parent / "maps")]
    prefix = [sys.executable, "-c", PROFILED_MAPS, str(ours)] if profile else [*callgrind(ours), sys.executable, *maps]
    per_problem = REQUESTS_PER_PROBLEM
    first, last = per_problem, per_problem * (problems - 1)
    recorder.switch = ProfileSwitch(first, last, ours) if profile else CallgrindSwitch(first, last)
    run_maps(work, problems, base_url, recorder, image_size, prefix)
    if len(recorder.bodies) != per_problem * problems:
        raise SystemExit(f"maps sent {len(recorder.bodies)} requests for {problems} problems, not {per_problem} each")
    load = f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    if profile:
        print(f"maps eval mathvista, {problems} problems at concurrency 1; {load}")
        print_profile(ours, steady)
        used = recorder.cpu_at[last] - recorder.cpu_at[first]
        print(f"CPU of the maps process over the same problems (/proc, the profiler's cost included; the clock ticks "
              f"every 10 ms): {1000 * used / steady:.1f} ms per problem")
        return
    theirs = work / "bare.out"
    run_bare_client(work, base_url, list(recorder.bodies), recorder, callgrind(theirs))
    mine, bare = instructions_in(ours) / steady, instructions_in(theirs) / steady
    print(f"maps eval mathvista, {problems} problems at concurrency 1 ({per_problem} requests each), counted by "
          f"callgrind from the first request of the second problem to that of the last; {load}")
    print(f"instructions per problem in steady state: maps {mine / 1e6:.1f} M, bare client {bare / 1e6:.1f} M "
          f"(same request bodies): {mine / bare:.1f}x")


if __name__ == "__main__":
    main()
