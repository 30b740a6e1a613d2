"""OlympiadBench: the task (rows to problems, answer format) and the official scorer, side by side."""

from maps_autogen.scoring.benchmarks.base import Benchmark
from maps_autogen.scoring.benchmarks.olympiadbench.scorer import SCORER
from maps_autogen.scoring.benchmarks.olympiadbench.task import TASK

BENCHMARK = Benchmark(task=TASK, scorer=SCORER)
