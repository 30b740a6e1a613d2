"""How fast `maps eval` gives up without a network (a script that prints, not a test).

    .venv/bin/python perf/offline_eval.py [--runs 5]
    .venv/bin/python perf/offline_eval.py --short     # one run of each

Runs `maps eval <benchmark>` with no `--data` and an empty Hugging Face cache, three ways: a hub
endpoint that refuses connections, a hub host name that does not resolve, and HF_HUB_OFFLINE=1.
Prints the wall time of each (median and worst of --runs, whole process: interpreter start,
imports, probe, error) and the number of stderr lines. The target is under 2 s and one line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAPS = Path(sys.executable).with_name("maps")
CASES = {
    "connection refused": {"HF_ENDPOINT": "http://127.0.0.1:9"},
    "name does not resolve": {"HF_ENDPOINT": "https://hub.invalid"},
    "HF_HUB_OFFLINE=1": {"HF_HUB_OFFLINE": "1"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--benchmark", default="mathvista", choices=("mathvista", "olympiadbench", "emma"))
    parser.add_argument("--short", action="store_true", help="one run of each case")
    args = parser.parse_args()
    if args.short:
        args.runs = 1
    print(f"load average: {os.getloadavg()[0]:.2f}")
    for name, extra in CASES.items():
        times, lines = [], set()
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                env = {**os.environ, "HF_HOME": str(Path(tmp) / "hf"), "OPENAI_API_KEY": "sk-bench", **extra}
                started = time.monotonic()
                done = subprocess.run([str(MAPS), "eval", args.benchmark, "--runs-dir", str(Path(tmp) / "runs")],
                                      env=env, cwd=tmp, capture_output=True, text=True, timeout=120)
                times.append(time.monotonic() - started)
                lines.add(len(done.stderr.strip().splitlines()))
        print(f"{name:24s} median {statistics.median(times):.2f} s, worst {max(times):.2f} s, "
              f"stderr lines {sorted(lines)}, exit {done.returncode}")


if __name__ == "__main__":
    main()
