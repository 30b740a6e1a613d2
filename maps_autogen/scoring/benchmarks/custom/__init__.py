"""A benchmark of the user's own: the task (JSONL rows to problems, answer format) and its scorer."""

from ._scorer import SCORER as SCORER
from ._task import TASK as TASK
