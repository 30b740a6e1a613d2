"""Figures for `inspect eval maps_autogen/mathvista --limit 20` (a script that prints, not a
test): what making the task costs with its samples read lazily, beside the baseline from the
same run, the samples made as they were before (every problem read and its images encoded when
the task is made, before Inspect applies --limit).

    .venv/bin/python perf/inspect_task_creation.py            # 1,000 rows
    .venv/bin/python perf/inspect_task_creation.py --short    # CI: 50 rows

The rows are MathVista testmini rows with one small PNG each (tests/helpers/eval_fixtures.py
writes them), read from a local copy. Prints the time to make the task and the images read,
then the same for the eager baseline, then what running 20 samples reads now (each problem once).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import maps_autogen.benchmarks.mathvista._task as mathvista  # noqa: E402
from maps_autogen.benchmarks import get_benchmark  # noqa: E402
from maps_autogen.inspect_tasks import (  # noqa: E402
    benchmark_items,
    maps_task,
    problem_message,
)
from maps_autogen.settings import load_config, load_prompts  # noqa: E402
from tests.helpers.common import write_config  # noqa: E402
from tests.helpers.eval_fixtures import write_mathvista_jsonl  # noqa: E402

LIMIT = 20


def count_reads() -> list[str]:
    """Every image the MathVista rows' reader decodes, by name."""
    reads: list[str] = []
    original = mathvista.image_from_field

    def counting(*args: Any, **kwargs: Any) -> Any:
        reads.append(str(kwargs.get("name", "")))
        return original(*args, **kwargs)

    mathvista.image_from_field = counting  # type: ignore[assignment]
    return reads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="50 rows (CI)")
    rows = 50 if parser.parse_args().short else 1000
    reads = count_reads()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data, _ = write_mathvista_jsonl(work / "mathvista", rows)
        config = write_config(work / "agents.yaml")
        os.chdir(work)

        started = time.perf_counter()
        task = maps_task("mathvista", data=str(data), config=str(config))
        lazy_s, lazy_reads = time.perf_counter() - started, len(reads)
        assert len(task.dataset) == rows

        reads.clear()
        started = time.perf_counter()
        loaded = load_config(config)
        prompts = load_prompts(loaded)
        items = benchmark_items(get_benchmark("mathvista").task, loaded, data)
        eager = [problem_message(item.load_problem(), prompts.task.labels) for item in items]  # as before
        eager_s, eager_reads = time.perf_counter() - started, len(reads)
        assert len(eager) == rows

        reads.clear()
        for item in items[:LIMIT]:  # what --limit 20's samples read when they run: each problem once
            problem_message(item.load_problem(), prompts.task.labels)
        limited_reads = len(reads)

    print(f"{rows:,} rows, task made with lazy samples: {lazy_s:.2f} s, {lazy_reads} images read")
    print(f"{rows:,} rows, baseline (every sample read when the task is made): {eager_s:.2f} s, "
          f"{eager_reads} images read")
    print(f"--limit {LIMIT}: {limited_reads} images read when the samples run (each once)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
