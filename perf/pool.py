"""Throughput of an endpoint pool over two fake replicas of different speeds.

Each replica (a subprocess) serves `--slots` requests at a time, each taking its latency, so its
capacity is slots / latency requests per second. The benchmark drives each replica alone, then
both through one pooled endpoint, with `--clients` threads calling without pause, and prints the
pool's throughput against the sum of the replicas' measured capacities.

    .venv/bin/python perf/pool.py --latencies 0.05 0.15 --slots 4 --clients 16 --calls 800
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = r"""
import sys, threading, time
sys.path.insert(0, sys.argv[1])
from tests.fake_openai import FakeOpenAI, Reply
latency, slots = float(sys.argv[2]), threading.Semaphore(int(sys.argv[3]))
def script(request):
    with slots:  # a replica serves `slots` requests at a time, like a server's batch size
        time.sleep(latency)
    return Reply("ok")
with FakeOpenAI(script) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def drive(base_urls: list[str], clients: int, calls: int) -> tuple[float, dict[str, int]]:
    """Requests per second over `calls` calls from `clients` threads, and what each replica served."""
    from maps_autogen.client import ChatBackend
    from maps_autogen.endpoints import ResolvedModel

    model = ResolvedModel(endpoint_name="bench", kind="openai", model="m", base_url=base_urls[0], timeout_s=60,
                          max_retries=2,
                          json_mode="none", stream=False, temperature=None, max_tokens=None,
                          base_urls=tuple(base_urls) if len(base_urls) > 1 else ())
    backend = ChatBackend(model, max_connections=clients)
    remaining = [calls]
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            backend.complete([{"role": "user", "content": "hi"}], role="aligner")

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rate = calls / (time.monotonic() - started)
    return rate, backend.pool.served() if backend.pool else {base_urls[0]: calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latencies", type=float, nargs=2, default=[0.05, 0.15])
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--calls", type=int, default=800)
    args = parser.parse_args()
    servers = [subprocess.Popen([sys.executable, "-c", SERVER, str(ROOT), str(latency), str(args.slots)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for latency in args.latencies]
    try:
        urls = [server.stdout.readline().strip() for server in servers]
        alone = []
        for url, latency in zip(urls, args.latencies):
            rate, _ = drive([url], args.clients, args.calls // 2)
            alone.append(rate)
            print(f"replica at {latency * 1000:.0f} ms x {args.slots} slots alone: {rate:.1f} requests/s "
                  f"(nominal capacity {args.slots / latency:.1f})")
        pooled, served = drive(urls, args.clients, args.calls)
    finally:
        for server in servers:
            server.stdin.close()
            server.wait(timeout=10)
    share = ", ".join(f"{count}" for count in served.values())
    nominal = sum(args.slots / latency for latency in args.latencies)
    print(f"pool of both: {pooled:.1f} requests/s = {pooled / sum(alone):.1%} of the sum of their measured capacities "
          f"({sum(alone):.1f}); {pooled / nominal:.1%} of the nominal sum; "
          f"requests served per replica: {share}")


if __name__ == "__main__":
    main()
