"""`\\boxed{…}` as the official scorers read it (EMMA's extraction, and MathVista's rules for a
boxed answer): shared by the benchmarks, so none imports another.

(`tasks.boxed_contents` is the task side's reading, for rendering answers: it strips each box
and stops at an unclosed one.)
"""

from __future__ import annotations


def boxed_contents(text: str) -> list[str]:
    """Contents of every `\\boxed{…}` by brace matching; an unclosed box yields nothing.

    Scanning resumes right after each box's closing brace, so boxes nested inside a box are
    not reported on their own.
    """
    found: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("\\boxed{", i):
            start = i = i + len("\\boxed{")
            depth = 0
            while i < len(text):
                if text[i] == "{":
                    depth += 1
                elif text[i] == "}":
                    if depth == 0:
                        found.append(text[start:i])
                        break
                    depth -= 1
                i += 1
        i += 1
    return found
