"""A benchmark of the user's own: the task (JSONL rows to problems, answer format) and its scorer."""

from ._scorer import SCORER as SCORER, gold_evaluation as gold_evaluation, gold_problem as gold_problem
from ._task import TASK as TASK
