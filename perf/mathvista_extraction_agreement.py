"""Agreement of the rule-based MathVista extractor with the official verdicts.

Scores every record of the developers' conformance set from its raw `response` only (the
official `extraction` removed), with the integer rule its source file was scored with, and
compares the verdict with the official one. Prints: agreement overall, by question type and
answer type and by source file; false accepts (we credit, the official pipeline does not) and
false rejects, also per 10,000 records; how each record was extracted; the remaining
disagreements grouped by cause, with examples; and the time to extract 1 MB adversarial
responses.

Every record, agreeing or not, is also put in an "official family" when its official
extraction is not the answer the response gives (decided from the record, the official
extraction and whether the response answers at all, never from our verdict): the official
LLM misread a program, read the model's invented follow-up exercise, extracted something the
response never states, wrote its own placeholder for a refusal, picked an item from a response
that only lists options, or had an extraction for a blank response. Agreement is then reported
on the records outside all those families: the limit for any extractor that reads the response
without imitating the official extractor's mistakes.

    .venv/bin/python perf/mathvista_extraction_agreement.py [--data FILE] [--examples 3]
    .venv/bin/python perf/mathvista_extraction_agreement.py --short   # the first 500 records

The full set lives outside the repository (../shared/conformance/); without it the script reads
the subset that ships with the project (tests/fixtures/conformance/). This is a measurement, not a
test: tests/scoring/test_conformance_mathvista.py asserts the floors.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maps_autogen.benchmarks.mathvista import SCORER  # noqa: E402
from maps_autogen.benchmarks.mathvista._extract import extract  # noqa: E402
from maps_autogen.benchmarks.mathvista._number_answers import is_plain_number, numbers_in  # noqa: E402
from maps_autogen.benchmarks.mathvista._program_output import parse_program, program_output  # noqa: E402
from maps_autogen.benchmarks.mathvista._response_text import bound_text, cut_continuation, is_refusal  # noqa: E402

DATA_NAME = "mathvista_testmini_verdicts.dev.jsonl.gz"
# ../shared/conformance beside the checkout (or beside the folder holding a git worktree).
# (else the subset that ships with the project, tests/fixtures/conformance/).
DEFAULT_DATA = next((folder / "shared" / "conformance" / DATA_NAME for folder in ROOT.parents
                     if (folder / "shared" / "conformance" / DATA_NAME).exists()),
                    ROOT / "tests" / "fixtures" / "conformance" / "mathvista_testmini_verdicts.subset.jsonl.gz")
_CODE = re.compile(r"^\s{0,8}(?:print\(|def |import |from \w+ import |return )", re.MULTILINE)
_LIBRARY = re.compile(r"^\s{0,8}(?:import|from)\s+(?:numpy|sympy|scipy|pandas|datetime|statistics|fractions|decimal)\b",
                      re.MULTILINE)


@dataclass(frozen=True)
class Outcome:
    """One record scored from its response, beside the official verdict."""

    record: dict[str, Any]
    extraction: str | None
    prediction: str | None
    correct: bool
    method: str
    status: str  # the rules' reading: answer, no_answer or unreadable

    @property
    def agrees(self) -> bool:
        return self.correct == self.record["true_false"]


def rules_of(record: dict[str, Any]) -> str:
    """The integer rule the record's source file was scored with (both agree: "current")."""
    return "legacy" if record["integer_rule_of_file"].startswith("int_only") else "current"


def score_from_response(record: dict[str, Any]) -> Outcome:
    without_extraction = {key: value for key, value in record.items() if key != "extraction"}
    verdict = SCORER.score(without_extraction, rules_of(record))
    read = extract(record["response"], question_type=record["question_type"],
                   answer_type=record["answer_type"], choices=record["choices"])
    return Outcome(record, verdict.extraction, verdict.prediction, verdict.correct,
                   verdict.extraction_method or "?", read.status)


def _letter_stated(letter: str, text: str) -> bool:
    # A letter of its own: "B" is not stated in "U13B" or "A-847"'s neighbour "B2"; it is in
    # "选项B正确" (Chinese text around a letter does not make it part of a word).
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(letter)}(?![A-Za-z0-9])", text) is not None


def _official_text_in(text: str, record: dict[str, Any]) -> bool:
    """Whether the official extraction is stated in `text` (as a letter, text or number)."""
    official = str(record["extraction"] or "").strip()
    if not official:
        return False
    if record["question_type"] == "multi_choice" and len(official) == 1 and official.isalpha():
        return _letter_stated(official, text)
    wanted = numbers_in(official)
    if not (is_plain_number(official) or (len(wanted) == 1 and len(official) <= 12)) \
            and official.lower() in text.lower():
        return True
    # A number is stated when the text states that number, in any form ("13.0" for "13",
    # "1,000" for "1000"), not when its digits begin another number ("-1" in "-1.83e-16");
    # an extraction holding several numbers ("1 hour and 15 minutes") must be stated as it is.
    return len(wanted) == 1 and len(official) <= 12 \
        and any(_same_number(wanted[0], stated) for stated in numbers_in(text))


def _same_number(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except (ValueError, OverflowError):
        return False


def _is_placeholder(official: str, record: dict[str, Any]) -> bool:
    """Whether an official extraction is a no-answer placeholder ("N/A", "Not determinable",
    "I can't process this file.") rather than an answer: no choice letter, no option's text,
    no number."""
    text = official.strip()
    if is_refusal(text) or text.lower() in ("n/a", "none", "unknown", ""):
        return True
    if numbers_in(text):
        return False
    if record["question_type"] != "multi_choice":
        return True
    options = [str(choice).strip().lower() for choice in record["choices"] or []]
    named = re.search(r"(?<![A-Za-z])[A-Z](?![A-Za-z])", text) is not None
    return not named and not any(option and option in text.lower() for option in options)


def official_family(record: dict[str, Any]) -> str | None:
    """The family of records whose official extraction is not the answer the response gives
    (the official LLM extractor's own errors and guesses), or None. Decided from the record,
    the official extraction and whether the response gives an answer at all (what a program
    prints, where an invented exercise starts, whether it declines), never from our verdict,
    so that leaving these families out does not favour our extractor."""
    response = (record["response"] or "").strip()
    official = str(record["extraction"] or "")
    if not response:
        # The official code extracts "" from a blank response; anything else came from elsewhere.
        return "official extraction without a response" if official.strip() else None
    program = parse_program(bound_text(response))
    if program is not None:
        printed = program_output(program)
        if printed is not None:
            if not _official_text_in(printed, record):
                return "official extraction is not what the program prints (the LLM misread the code)"
            return None
        # What it prints is not worked out: an official extraction the text does not state
        # may still be what the program prints, so the record stays ours to answer for.
        return None
    kept = cut_continuation(response)
    # The official extraction stated in the invented exercise, and not in the answer before it.
    if kept != response and not _official_text_in(kept, record) \
            and _official_text_in(response[len(kept):], record):
        return "official read the model's invented follow-up exercise, not its answer"
    read = extract(response, question_type=record["question_type"],
                   answer_type=record["answer_type"], choices=record["choices"])
    if read.status == "no_answer" and _is_placeholder(official, record) \
            and official.strip().lower() != str(read.answer).strip().lower():
        return "no answer: the official LLM wrote its own placeholder, mapped by edit distance"
    if official.strip() and not _official_text_in(response, record):
        return "official extraction not stated anywhere in the response"
    if official.strip() and _only_lists_options(response):
        return "the response only lists options (chooses none); the official picked one"
    return None


# A line of a listing of options: "(E) 75°", "(AB) 190°" (labels run on past Z).
_LISTED_OPTION = re.compile(r"\s{0,8}[(（][A-Z]{1,2}[)）][^\n]{0,60}$")


def _only_lists_options(response: str) -> bool:
    """Whether the response is nothing but a listing of three or more options, one a line
    (its last line possibly cut short): it names no option as its answer."""
    lines = [line for line in response.split("\n") if line.strip()]
    return len(lines) >= 3 and all(_LISTED_OPTION.match(line) for line in lines[:-1]) \
        and lines[-1].lstrip().startswith(("(", "（"))


def cause_of(outcome: Outcome) -> str:
    """The family a disagreement belongs to: an official family, else ours."""
    family = official_family(outcome.record)
    if family is not None:
        return family
    record = outcome.record
    response = record["response"] or ""
    program = parse_program(bound_text(response.strip()))
    if program is not None:
        if outcome.method == "unreadable" and program_output(program):
            return "ours: program prints a number that is no option (unreadable, not mapped by edit distance)"
        if outcome.method == "unreadable" and _LIBRARY.search(response):
            return "ours: program using a library (unreadable: libraries are not emulated)"
        if outcome.method == "unreadable":
            return "ours: program outside the subset we work out (unreadable)"
        return "ours: program output read differently"
    if _CODE.search(response):
        return "ours: prose with code, official took a value computed in the code"
    if outcome.method == "unreadable":
        return "ours: rules could not read the response (unreadable)"
    if outcome.status == "no_answer":
        return "ours: no answer found, official found one"
    return "ours: rules read a different answer" + (" (we credit it)" if outcome.correct else " (we reject it)")


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:6.2f}%" if whole else "     -"


def _table(title: str, groups: dict[str, list[Outcome]]) -> None:
    print(f"\n{title}")
    width = max(len(name) for name in groups)
    print(f"  {'':<{width}}  {'records':>7}  {'agree':>7}  {'false acc.':>10}  {'false rej.':>10}")
    for name in sorted(groups):
        outcomes = groups[name]
        agree = sum(o.agrees for o in outcomes)
        false_accepts = sum(o.correct and not o.record["true_false"] for o in outcomes)
        false_rejects = sum(not o.correct and o.record["true_false"] for o in outcomes)
        print(f"  {name:<{width}}  {len(outcomes):>7}  {_pct(agree, len(outcomes))}  "
              f"{false_accepts:>10}  {false_rejects:>10}")


def _snippet(text: str, limit: int = 160) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit // 2] + " … " + flat[-limit // 2:]


def adversarial_timing() -> None:
    """Extract from 1 MB responses built to defeat backtracking; print the slowest time."""
    megabyte = 1_000_000
    texts = {
        "digits and commas": "1," * (megabyte // 2),
        "thousands chain": "1" + ",000" * (megabyte // 4) + "0",
        "answer cues": "the answer is " * (megabyte // 14),
        "open boxes": "\\boxed{" * (megabyte // 7),
        "parentheses": "(A" * (megabyte // 2),
        "spaces then fraction": " " * megabyte + "3/",
        "question lines": "\nQuestion:" * (megabyte // 10),
        "busy program": "a = list(range(2000))\nn = 0\nfor i in a:\n    for j in a:\n        n += -j in a\nprint(n)",
        "busy polynomial": "import sympy as sp\nx = sp.Symbol('x')\np = sum([x**k for k in range(12)])\n"
                           "n = 0\nwhile n < 100000:\n    q = p.subs(x, 3) + p * 2\n    n += 1\nprint(q)",
        "busy numpy": "import numpy as np\nv = list(range(2000))\nn = 0\nwhile n < 100000:\n"
                      "    m = np.median(v)\n    n += 1\nprint(m)",
        "busy sympy": "import sympy as sp\nv = sp.symbols(' '.join(f'x{i}' for i in range(20)))\n"
                      "s = [sp.Eq(sum([(i * j % 7 + 1) * x for j, x in enumerate(v)]), 3 ** 300 + i)"
                      " for i in range(20)]\nn = 0\nwhile n < 100000:\n    r = sp.solve(s, v)\n"
                      "    n += 1\nprint(r)",
    }
    print("\nadversarial responses of 1 MB (and a busy program), all four answer kinds:")
    for name, text in texts.items():
        started = time.perf_counter()
        for question_type, answer_type in [("multi_choice", "text"), ("free_form", "integer"),
                                           ("free_form", "float"), ("free_form", "list")]:
            extract(text, question_type=question_type, answer_type=answer_type,
                    choices=["A", "B", "C", "D"])
        print(f"  {name:<22} {1000 * (time.perf_counter() - started):8.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--examples", type=int, default=3, help="examples printed per cause")
    parser.add_argument("--short", action="store_true", help="the first 500 records (figures not meaningful)")
    args = parser.parse_args()
    if not args.data.exists():
        print(f"error: {args.data} not found (pass --data)", file=sys.stderr)
        return 2
    with gzip.open(args.data, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    if args.short:
        records = records[:500]
    started = time.perf_counter()
    outcomes = [score_from_response(record) for record in records]
    seconds = time.perf_counter() - started
    total = len(outcomes)
    agree = sum(o.agrees for o in outcomes)
    false_accepts = sum(o.correct and not o.record["true_false"] for o in outcomes)
    false_rejects = sum(not o.correct and o.record["true_false"] for o in outcomes)
    same_extraction = sum(o.extraction == o.record["extraction"] for o in outcomes)
    print(f"{args.data.name}: {total} records, scored from `response` in {seconds:.2f} s")
    print(f"agreement with the official verdicts: {agree} / {total} = {100 * agree / total:.2f}%")
    print(f"false accepts: {false_accepts} ({10_000 * false_accepts / total:.0f} per 10,000); "
          f"false rejects: {false_rejects} ({10_000 * false_rejects / total:.0f} per 10,000)")
    print(f"same extraction string as the official one: {100 * same_extraction / total:.1f}%")

    by_type: dict[str, list[Outcome]] = defaultdict(list)
    by_source: dict[str, list[Outcome]] = defaultdict(list)
    by_method: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        record = outcome.record
        by_type[f"{record['question_type']} / {record['answer_type']}"].append(outcome)
        by_source[record["source_file"].rsplit("/", 1)[-1]].append(outcome)
        no_answer = outcome.status == "no_answer"
        by_method[outcome.method + (" (no answer)" if no_answer else "")].append(outcome)
    _table("by question type / answer type:", by_type)
    _table("by source file:", by_source)
    _table("by how the answer was extracted:", by_method)

    causes: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        if not outcome.agrees:
            causes[cause_of(outcome)].append(outcome)
    print(f"\ndisagreements by cause ({total - agree}):")
    for cause, members in sorted(causes.items(), key=lambda item: -len(item[1])):
        direction = Counter("false accept" if o.correct else "false reject" for o in members)
        print(f"  {len(members):>5}  {cause}  [{', '.join(f'{n} {k}' for k, n in sorted(direction.items()))}]")
        for outcome in members[: args.examples]:
            record = outcome.record
            print(f"         {record['source_file'].rsplit('/', 1)[-1]} pid={record['pid']} "
                  f"answer={record['answer']!r} official={_snippet(str(record['extraction']), 40)!r}"
                  f"→{record['true_false']} ours={outcome.extraction!r}→{outcome.correct}")
            print(f"           response: {_snippet(record['response'])!r}")
    families: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        families[official_family(outcome.record) or "(rest)"].append(outcome)
    _table("all records by official family (official extraction not the response's answer):",
           families)
    rest = families["(rest)"]
    rest_agree = sum(o.agrees for o in rest)
    rest_false_accepts = sum(o.correct and not o.record["true_false"] for o in rest)
    rest_false_rejects = sum(not o.correct and o.record["true_false"] for o in rest)
    print(f"\nleaving out every record of those families ({total - len(rest)} records, whatever "
          f"our verdict): agreement {rest_agree} / {len(rest)} = {100 * rest_agree / len(rest):.2f}%, "
          f"false accepts {rest_false_accepts} ({10_000 * rest_false_accepts / len(rest):.0f} per "
          f"10,000), false rejects {rest_false_rejects}")
    adversarial_timing()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
