"""MathVista: the task (rows to problems, answer format) and the official scorer, side by side."""

from ._scorer import SCORER as SCORER, with_llm_extraction as with_llm_extraction
from ._task import TASK as TASK
