"""The same eval live and by batch (`maps eval --batch`) in one run, on the scripted server
speaking the Batch API (a script that prints, not a test): rounds, requests per round, batches,
dollars per problem and per correct answer side by side, and what holding every problem in
flight costs the process (its peak memory, its CPU).

    .venv/bin/python perf/batch_cost.py            # 300 problems (a minute or two)
    .venv/bin/python perf/batch_cost.py --short    # CI: 6 problems

A custom benchmark of text problems (tests/helpers/eval_fixtures.py), answered by the scripted
server as one script: every third answer wrong, every fifth problem's first review low (a
rollback that joins a later round). Both runs are `maps eval custom` in their own process, at
the default gpt-4o prices (live) and its batch prices (half); the figures are `maps report`'s
(eval/_answer_cost.py) and the batches' own records (records/_batch_records.py). The scripted
service ends a batch on its fourth look: the wall time of a batch run here is our own overhead,
not a service's queue (docs/batch.md says how long rounds take at OpenAI).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maps_autogen.eval import answer_costs, load_run  # noqa: E402
from tests.helpers.common import MAPS, write_config  # noqa: E402
from tests.helpers.eval_fixtures import ProblemScript, write_custom_jsonl  # noqa: E402
from tests.helpers.fake_batches import FakeBatches  # noqa: E402
from tests.helpers.fake_openai import FakeOpenAI  # noqa: E402


def run_eval(folder: Path, data: Path, config: Path, env: dict[str, str],
             batch: bool) -> tuple[Path, float, float, int]:
    """`maps eval custom` in its own process: its folder, wall seconds, CPU seconds and peak RSS (MB)."""
    args = [*MAPS, "eval", "custom", "--data", str(data), "--runs-dir", str(folder), "--config", str(config),
            "--no-cache", "--quiet", *(["--batch"] if batch else ["--concurrency", "32"])]
    started = time.monotonic()
    process = subprocess.Popen(args, env=env, cwd=folder.parent, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    if process.returncode != 0:
        raise RuntimeError(f"maps eval {'--batch ' if batch else ''}failed ({process.returncode}):\n"
                           f"{stdout.decode()[-1500:]}\n{stderr.decode()[-2500:]}")
    return (next(folder.glob("eval-*")), time.monotonic() - started, usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss // 1024)  # kilobytes on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="6 problems (CI)")
    parser.add_argument("--problems", type=int, default=300)
    options = parser.parse_args()
    problems = 6 if options.short else options.problems
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        data, answers = write_custom_jsonl(root / "data", problems)
        config = write_config(root / "agents.yaml", **{"endpoints.openai.batch_poll_s": 0.05})
        low = {f"p{n}" for n in range(1, problems + 1) if n % 5 == 0}
        batches = FakeBatches()
        figures = {}
        for batch in (False, True):
            script = ProblemScript(answers, critic_low=low)
            with FakeOpenAI(script, batches=batches if batch else None) as server:
                env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "MAPS_"))}
                env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-perf-batch-cost")
                figures[batch] = run_eval(root / ("batch" if batch else "live"), data, config, env, batch)
        costs = {batch: answer_costs([load_run(figures[batch][0])])[0] for batch in figures}
        records = [json.loads(path.read_text())
                   for path in sorted((figures[True][0] / "batches").glob("batch-*[0-9].json"))]
    per_round: dict[int, int] = {}
    for record in records:
        per_round[record["round"]] = per_round.get(record["round"], 0) + len(record["custom_ids"])
    counts = list(per_round.values())
    print(f"custom benchmark, {problems} text problems, the scripted server "
          "(gpt-4o prices; by batch: its batch prices):")
    for batch, label in ((False, "live (--concurrency 32)"), (True, "by batch")):
        row = costs[batch]
        _, wall, cpu, rss = figures[batch]
        per_problem, per_correct = row.per(row.problems), row.per(row.correct)
        print(f"{label}: accuracy {row.accuracy:.1f}% ({row.correct}/{row.scored}); calls {row.totals['calls']}; "
              f"cost per problem ${per_problem['cost']:.6f}, per correct answer ${per_correct['cost']:.6f}; "
              f"wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss} MB")
    saving = 1 - (costs[True].cost or 0) / (costs[False].cost or 1)
    print(f"by batch: {len(per_round)} rounds, {len(records)} batches, requests per round median "
          f"{statistics.median(counts):.0f} ({min(counts)}-{max(counts)}), first rounds {counts[:6]}; "
          f"cost {100 * saving:.1f}% below live")
    return 0


if __name__ == "__main__":
    sys.exit(main())
