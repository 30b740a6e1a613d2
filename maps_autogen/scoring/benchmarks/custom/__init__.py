"""A benchmark of the user's own: the task (JSONL rows to problems, answer format) and its scorer."""

from .scorer import SCORER as SCORER
from .task import TASK as TASK
