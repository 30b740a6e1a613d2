"""MathVista: the task (rows to problems, answer format) and the official scorer, side by side."""

from .scorer import SCORER as SCORER
from .task import TASK as TASK
