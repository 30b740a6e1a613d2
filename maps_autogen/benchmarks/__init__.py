"""One module per benchmark: its record schema, answer extraction, normalisation and verdict."""

from __future__ import annotations

import importlib

from maps_autogen.benchmarks.base import RecordError, Scorer, Verdict

BENCHMARK_MODULES = {
    "mathvista": "maps_autogen.benchmarks.mathvista",
    "olympiadbench": "maps_autogen.benchmarks.olympiadbench",
    "emma": "maps_autogen.benchmarks.emma",
}


def get_scorer(benchmark: str) -> Scorer:
    """The scorer of a benchmark by name (each module exposes a module-level `SCORER`)."""
    try:
        module_name = BENCHMARK_MODULES[benchmark]
    except KeyError:
        known = ", ".join(sorted(BENCHMARK_MODULES))
        raise ValueError(f"unknown benchmark {benchmark!r}; choose one of: {known}") from None
    return importlib.import_module(module_name).SCORER


__all__ = ["BENCHMARK_MODULES", "RecordError", "Scorer", "Verdict", "get_scorer"]
