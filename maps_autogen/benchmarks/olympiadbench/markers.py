"""The official final-answer sentences: the task writes them, the scorer reads the answer after them."""

ENGLISH_MARKER = "So the final answer is "
CHINESE_MARKER = "所以最终答案是"
