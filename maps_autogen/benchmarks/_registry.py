"""The one registry of benchmarks: `NAMES` is the only list of benchmark names (the CLI's choices,
`maps score`, `maps eval` and `maps report` all read it), and a benchmark's package is imported only
when it is asked for."""

from __future__ import annotations

import functools
import importlib

from maps_autogen._util import UsageError
from maps_autogen.benchmarks._base import Benchmark

NAMES = ("mathvista", "emma", "olympiadbench", "custom")  # the paper's column order (Table 1), then your own


@functools.cache
def get_benchmark(name: str) -> Benchmark:
    """The benchmark called `name`: its package's task and scorer (UsageError naming the known ones
    otherwise)."""
    if name not in NAMES:
        raise UsageError(f"unknown benchmark '{name}'", fix=f"use one of: {', '.join(NAMES)}")
    package = importlib.import_module(f"{__package__}.{name}")
    return Benchmark(task=package.TASK, scorer=package.SCORER)
