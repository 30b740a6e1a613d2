"""The worst responses for each scorer's work in our own process, timed: numbers at and past the
number bounds, boxes nested in boxes (OlympiadBench), font commands without a closing brace,
EMMA's extraction, MathVista's edit-distance tables at their bound and its rule extraction, a
results line with an integer past Python's digit limit (`maps score`), and what the symbolic
helper is sent. Each line gives the time, the work the bound was asked for (benchmarks/_bounds.py)
and whether the response was judged or left unjudged (judged wrong, saying why).

Prints one line per figure; nothing is asserted (tests/scoring/test_scorer_bounds.py asserts the work
bounds, never the time).

    .venv/bin/python perf/scorer_bounds.py
    .venv/bin/python perf/scorer_bounds.py --short    # seconds: 16 KB replies, no symbolic check
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maps_autogen.benchmarks import _bounds as bounds  # noqa: E402
from maps_autogen.benchmarks.custom import SCORER as CUSTOM  # noqa: E402
from maps_autogen.benchmarks.emma._scorer import extract_answer as emma_extract  # noqa: E402
from maps_autogen.benchmarks.mathvista import SCORER as MATHVISTA  # noqa: E402
from maps_autogen.benchmarks.mathvista._extract import extract  # noqa: E402
from maps_autogen.benchmarks.olympiadbench import SCORER as OLYMPIADBENCH  # noqa: E402
from maps_autogen.benchmarks.olympiadbench._scorer import extract_answer, preprocess  # noqa: E402
from maps_autogen.scoring._score import score_file  # noqa: E402

KILOBYTE = 1024


def measured(name: str, work: Callable[[], Any]) -> None:
    """One figure line: the time, the work asked of each bound, the outcome."""
    started = time.perf_counter()
    with bounds.metered() as meter:
        try:
            outcome = _outcome(work())
        except bounds.Unjudgeable as beyond:
            outcome = f"unjudged ({beyond.reason[:70]})"
    took = time.perf_counter() - started
    asked = ", ".join(f"{key} {units:,}/{bounds.BOUNDS[key]:,}" for key, units in sorted(meter.items())) or "none"
    print(f"{name}: {took:.3f} s, work asked {asked}; {outcome}")


def _outcome(result: Any) -> str:
    unjudged = getattr(result, "unjudged", None)
    if unjudged:
        return f"unjudged ({unjudged[:70]})"
    correct = getattr(result, "correct", None)
    return f"judged {'right' if correct else 'wrong'}" if correct is not None else "read"


def numbers() -> None:
    measured("number of 4,000 digits", lambda: CUSTOM.score({"answer": "7", "response": "9" * 4000}))
    measured("number of 4,001 digits", lambda: CUSTOM.score({"answer": "7", "response": "9" * 4001}))
    measured("number 3.5e10000", lambda: CUSTOM.score({"answer": "7", "response": "3.5e10000"}))
    measured("number 3.5e-10000 against 3.5e-10000", lambda: CUSTOM.score({"answer": "3.5e-10000",
                                                                           "response": "3.5e-10000"}))
    measured("number 2e123456789", lambda: CUSTOM.score({"answer": "7", "response": "2e123456789"}))
    measured("LaTeX number 7^{100000}", lambda: CUSTOM.score({"answer": "7", "response": "7^{100000}"}))
    nested = "\\frac{1}{2}" * 900
    measured(f"LaTeX number of 900 fractions side by side ({len(nested) // KILOBYTE} KB)",
             lambda: CUSTOM.score({"answer": "7", "response": nested}))
    brackets = "(1+" * 3300
    measured(f"LaTeX number in brackets never closed ({len(brackets) // KILOBYTE} KB)",
             lambda: CUSTOM.score({"answer": "7", "response": brackets}))


def olympiadbench(size: int) -> None:
    depth = size // 12
    nested = "\\boxed{a+" * depth + "1" + "}" * depth
    measured(f"OlympiadBench boxes nested {depth:,} deep ({len(nested) // KILOBYTE} KB)",
             lambda: OLYMPIADBENCH.score({"final_answer": ["5"], "response": nested}))
    under = 400
    measured(f"OlympiadBench boxes nested {under:,} deep (under the bound)",
             lambda: preprocess("\\boxed{a+" * under + "1" + "}" * under))
    fonts = "\\mathrm{" * (size // 8)
    measured(f"OlympiadBench font commands never closed ({len(fonts) // KILOBYTE} KB)", lambda: preprocess(fonts))
    markers = "So the final answer is " * (size // 23)
    measured(f"OlympiadBench extraction, final-answer markers ({len(markers) // KILOBYTE} KB)",
             lambda: extract_answer(markers))


def emma(size: int) -> None:
    for name, reply in {"nested boxes": "\\boxed{" * (size // 7) + "}" * (size // 7),
                        "unclosed \\text{": "\\boxed{" + "\\text{" * (size // 6),
                        "answer phrases": "the answer is " * (size // 14)}.items():
        measured(f"EMMA extraction, {name} ({len(reply) // KILOBYTE} KB)", lambda text=reply: emma_extract(text))


def mathvista(size: int) -> None:
    side = int((bounds.MAX_EDIT_CELLS / 2) ** 0.5)
    record = {"pid": "1", "question_type": "multi_choice", "answer_type": "text", "choices": ["p" * side, "q" * side],
              "answer": "p" * side}
    measured(f"MathVista nearest option, {side:,}-character answer and options (at the bound)",
             lambda: MATHVISTA.score({**record, "extraction": "r" * side}))
    measured(f"MathVista nearest option, {side * 2:,}-character answer (past the bound)",
             lambda: MATHVISTA.score({**record, "extraction": "r" * side * 2}))
    reply = "(A) " * (size // 4)
    measured(f"MathVista rule extraction ({len(reply) // KILOBYTE} KB of option letters)",
             lambda: extract(reply, question_type="multi_choice", answer_type="text", choices=["a", "b"]))


def digit_limit() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "outputs.jsonl"
        line = '{"id": "1", "answer": "4", "response": "4", "note": ' + "8" * 100_000 + "}\n"
        path.write_text(json.dumps({"id": "0", "answer": "4", "response": "4"}) + "\n" + line)
        measured("maps score, a line with a 100,000-digit integer", lambda: score_file("custom", path).skipped[0])


def symbolic() -> None:
    from maps_autogen.benchmarks import _symbolic

    answer = "x+" * (bounds.MAX_SYMBOLIC_CHARS // 2 - 20) + "1"
    measured(f"OlympiadBench symbolic check of a {len(answer) // KILOBYTE} KB answer "
             f"(time limit {_symbolic.time_limit():g} s of CPU time)",
             lambda: OLYMPIADBENCH.score({"final_answer": ["5"], "response": f"So the final answer is ${answer}$"}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="small sizes, no symbolic helper (seconds)")
    short = parser.parse_args().short
    size = 16 * KILOBYTE if short else 256 * KILOBYTE  # a reply is at most limits.reply_bytes: 256 KB
    numbers()
    olympiadbench(size)
    emma(size)
    mathvista(size)
    digit_limit()
    if not short:
        symbolic()


if __name__ == "__main__":
    main()
