"""EMMA-mini: the task (rows to problems, answer format) and the official scorer, side by side."""

from ._scorer import SCORER as SCORER
from ._task import TASK as TASK
