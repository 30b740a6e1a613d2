"""An endpoint pool over fake replicas of different speeds: throughput, each replica's share, failover.

Each replica (aiohttp, its own process) serves `--slots` requests at a time, each taking its
latency, so its capacity is slots / latency requests per second. `--clients` threads call through
one `ChatBackend` (the client `maps` uses) without pause. Scenarios, each printing its rate beside
its baseline and, per replica, the share of the calls it served beside its share of the capacity:

- saturated: each replica alone (its measured capacity, the baseline), then both pooled: the pool's
  rate against the sum of their measured capacities;
- unsaturated: fewer clients than slots (`--clients` // 4, at least 2): the faster replica should
  take more than its capacity share, since a request there ends sooner;
- failover, replica dies: three replicas; once half the calls are done one is killed; the calls
  must all succeed (the pool rests the dead replica) and the rate stays near the survivors';
- failover, replica answers 503: the same, but one replica starts answering 503 (Retry-After: 0,
  so retries do not wait: this measures routing, not backoff).

    .venv/bin/python perf/pool.py --latencies 0.05 0.15 --slots 4 --clients 16 --calls 800
    .venv/bin/python perf/pool.py --short     # seconds, figures not meaningful
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from _service import serve_until_stdin_closes, spawn_service, stop_service

ROOT = Path(__file__).resolve().parents[1]


def replica(latency: float, slots: int) -> None:
    """One fake replica (`pool.py _replica LATENCY SLOTS`): prints its port; /_fail makes it answer
    503 from then on; /_count says how many calls it served (200)."""
    from aiohttp import web

    state = {"failing": False, "served": 0}

    async def complete(request: web.Request) -> web.Response:
        await request.read()
        if state["failing"]:
            return web.json_response({"error": {"message": "overloaded"}}, status=503, headers={"Retry-After": "0"})
        async with gate:  # `slots` requests at a time, like a server's batch size
            await asyncio.sleep(latency)
        state["served"] += 1
        return web.json_response({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                               "finish_reason": "stop"}],
                                  "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}})

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})

    async def fail(request: web.Request) -> web.Response:
        state["failing"] = True
        return web.json_response({})

    async def count(request: web.Request) -> web.Response:
        return web.json_response({"served": state["served"]})

    gate = asyncio.Semaphore(slots)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", complete)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/_fail", fail)
    app.router.add_get("/_count", count)
    serve_until_stdin_closes(app, backlog=1024)


class Replica:
    def __init__(self, latency: float, slots: int):
        self.latency, self.slots = latency, slots
        self.process, self.url = spawn_service(__file__, "_replica", str(latency), str(slots))
        self.final_count: int | None = None

    @property
    def capacity(self) -> float:
        return self.slots / self.latency

    def served(self) -> int:
        if self.final_count is not None:
            return self.final_count
        with urllib.request.urlopen(self.url + "/_count", timeout=30) as reply:
            return int(json.loads(reply.read())["served"])

    def fail(self) -> None:
        urllib.request.urlopen(urllib.request.Request(self.url + "/_fail", data=b"", method="POST"), timeout=30).close()

    def die(self) -> None:
        self.final_count = self.served()  # what it served before dying (its replies in flight are cut)
        self.process.kill()
        self.process.wait()

    def close(self) -> None:
        stop_service(self.process)


class Retries(logging.Handler):
    """Counts the client's "model call failed ...; retry" warnings instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


RETRIES = Retries()


def drive(replicas: list[Replica], clients: int, calls: int,
          midway: Callable[[], None] | None = None) -> tuple[float, int]:
    """Successful calls per second over `calls` calls from `clients` threads through one
    ChatBackend (a pool when there are several replicas), and how many calls failed after their
    retries; `midway` runs once half the calls are done."""
    sys.path.insert(0, str(ROOT))
    from maps_autogen.model._client import ChatBackend
    from maps_autogen.settings._endpoints import ResolvedModel

    urls = [f"{r.url}/v1" for r in replicas]
    model = ResolvedModel(endpoint_name="bench", kind="openai", model="m", base_url=urls[0], timeout_s=60,
                          max_retries=3, json_mode="none", stream=False, temperature=None, max_tokens=None,
                          base_urls=tuple(urls) if len(urls) > 1 else ())
    backend = ChatBackend(model, max_connections=clients)
    lock = threading.Lock()
    counts = {"left": calls, "done": 0, "failed": 0}
    half = threading.Event()

    def worker() -> None:
        while True:
            with lock:
                if counts["left"] == 0:
                    return
                counts["left"] -= 1
            try:
                backend.complete([{"role": "user", "content": "hi"}], role="aligner")
            except Exception:  # noqa: BLE001 - a call that failed after its retries is counted, not raised
                with lock:
                    counts["failed"] += 1
            with lock:
                counts["done"] += 1
                if counts["done"] * 2 >= calls:
                    half.set()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    if midway is not None:
        half.wait()
        midway()
    for thread in threads:
        thread.join()
    return (calls - counts["failed"]) / (time.monotonic() - started), counts["failed"]


def shares(replicas: list[Replica], before: list[int], label: str = "") -> str:
    """Each replica's share of the calls it served against its share of the capacity."""
    served = [r.served() - b for r, b in zip(replicas, before)]
    total_served, total_capacity = max(1, sum(served)), sum(r.capacity for r in replicas)
    return "; ".join(f"replica {n} ({r.latency * 1000:.0f} ms x {r.slots}{label if n == 1 else ''}) served "
                     f"{count} = {count / total_served:.0%} (capacity share {r.capacity / total_capacity:.0%})"
                     for n, (r, count) in enumerate(zip(replicas, served), start=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latencies", type=float, nargs=2, default=[0.05, 0.15])
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--short", action="store_true", help="seconds: few calls, figures not meaningful")
    args = parser.parse_args()
    client_log = logging.getLogger("maps_autogen.model._client")
    client_log.addHandler(RETRIES)
    client_log.propagate = False
    if args.short:
        args.latencies, args.slots, args.clients, args.calls = [0.01, 0.03], 2, 6, 60
    fast, slow = args.latencies
    replicas = [Replica(fast, args.slots), Replica(slow, args.slots)]
    spares: list[Replica] = []
    try:
        alone = []
        for r in replicas:
            rate, _ = drive([r], args.clients, args.calls // 2)
            alone.append(rate)
            print(f"replica at {r.latency * 1000:.0f} ms x {args.slots} slots alone: {rate:.1f} requests/s "
                  f"(nominal capacity {r.capacity:.1f})")
        before = [r.served() for r in replicas]
        pooled, _ = drive(replicas, args.clients, args.calls)
        nominal = sum(r.capacity for r in replicas)
        print(f"saturated pool of both ({args.clients} clients): {pooled:.1f} requests/s = "
              f"{pooled / sum(alone):.1%} of "
              f"the sum of their measured capacities ({sum(alone):.1f}), {pooled / nominal:.1%} of the nominal sum; "
              + shares(replicas, before))

        clients = max(2, args.clients // 4)
        before = [r.served() for r in replicas]
        rate, _ = drive(replicas, clients, args.calls // 2)
        # With C clients and nothing queued the best is the fast replica's free slots first.
        best = min(clients, args.slots) / fast + max(0, min(clients - args.slots, args.slots)) / slow
        print(f"unsaturated pool ({clients} clients, {2 * args.slots} slots): {rate:.1f} requests/s = "
              f"{rate / best:.0%} of the best placement ({best:.1f}: the fast replica's slots first); "
              + shares(replicas, before))

        for failure in ("dies", "answers 503"):
            trio = [Replica(fast, args.slots) for _ in range(3)]
            spares += trio
            survivors = sum(r.capacity for r in trio[1:])
            victim = trio[0]
            retried = RETRIES.count
            midway = victim.die if failure == "dies" else victim.fail
            rate, failed = drive(trio, args.clients, args.calls, midway=midway)
            print(f"failover, one of 3 replicas {failure} halfway ({args.clients} clients, {args.calls} calls): "
                  f"{rate:.1f} successful calls/s against the survivors' nominal {survivors:.1f}; "
                  f"calls failed after their retries: {failed}; retries {RETRIES.count - retried}; "
                  + shares(trio, [0, 0, 0], label=f", {failure} halfway"))
    finally:
        for r in replicas + spares:
            r.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["_replica"]:
        replica(float(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
