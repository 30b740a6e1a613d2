"""A benchmark of the user's own: the task (JSONL rows to problems, answer format) and its scorer."""

from maps_autogen.scoring.benchmarks.base import Benchmark
from maps_autogen.scoring.benchmarks.custom.scorer import SCORER
from maps_autogen.scoring.benchmarks.custom.task import TASK

BENCHMARK = Benchmark(task=TASK, scorer=SCORER)
