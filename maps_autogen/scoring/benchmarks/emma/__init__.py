"""EMMA-mini: the task (rows to problems, answer format) and the official scorer, side by side."""

from maps_autogen.scoring.benchmarks.base import Benchmark
from maps_autogen.scoring.benchmarks.emma.scorer import SCORER
from maps_autogen.scoring.benchmarks.emma.task import TASK

BENCHMARK = Benchmark(task=TASK, scorer=SCORER)
