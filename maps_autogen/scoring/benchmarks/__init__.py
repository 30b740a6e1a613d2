"""The benchmarks, one package each (task + scorer side by side), and their one registry.

What the scorers share sits beside them: `base.py` (the scorer protocol), `boxed.py` and
`_symbolic.py` (the scorers' shared rules); what the tasks share is below, in the problem layer:
`problem/_tasks.py` (the task protocol and answer rendering), `problem/_rows.py` and
`problem/_hub.py` (reading a data set's rows). A benchmark never imports another.

`NAMES` is the only list of benchmark names: the CLI's choices, `maps score`, `maps eval` and
`maps report` all read it. A benchmark's package is imported only when it is asked for.
"""

from __future__ import annotations

import importlib

from maps_autogen._util import UsageError
from maps_autogen.scoring.benchmarks.base import Benchmark, RecordError, Scorer, Verdict

NAMES = ("mathvista", "emma", "olympiadbench", "custom")  # the paper's column order (Table 1), then your own


def get_benchmark(name: str) -> Benchmark:
    """The benchmark called `name` (UsageError naming the known ones otherwise)."""
    if name not in NAMES:
        raise UsageError(f"unknown benchmark '{name}'", fix=f"use one of: {', '.join(NAMES)}")
    benchmark: Benchmark = importlib.import_module(f"{__name__}.{name}").BENCHMARK
    return benchmark


__all__ = ["NAMES", "Benchmark", "RecordError", "Scorer", "Verdict", "get_benchmark"]
