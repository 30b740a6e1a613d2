"""EMMA's part of scripts/conformance_fixtures.py: responses we generate, in the forms models
write (letters, "answer:" phrases, boxes, numbers, LaTeX, words for numbers, the whole-parse
cases), scored by EMMA's own fast evaluation run in `--python` (latex2sympy2 1.9.1 there): the
current code (EMMA-Bench/EMMA's evaluation/) and the first release (hychaochao/EMMA@838b6de).
Each record is judged in a fresh process (latex2sympy2 keeps state between calls; the order
dependence is measured apart, docs/benchmarks.md). Where the two versions differ, the record is
written twice, once per version, so both rule versions are pinned down."""

from __future__ import annotations

import itertools
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

# Run in the official interpreter, with evaluate.py and utils.py of one version on its path:
# each record in a forked child (a fresh latex2sympy2), killed after 30 s. What evaluate.py's
# gen_true_false does per record: no response -> extraction None and wrong; else the fast
# extraction, then is_equal against the answer or the option text.
_CHILD = r'''
import json, os, select, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[1])
import latex2sympy2  # noqa: F401
from evaluate import fast_extract_answer
from utils import is_equal

def scored(record):
    if not record.get("response"):
        return None, False
    extraction = fast_extract_answer(record["response"])
    return extraction, bool(is_equal(extraction, record["answer"]) or is_equal(extraction, record["gt_content"]))

out = []
for record in json.load(open(sys.argv[2])):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(write, json.dumps(scored(record)).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while select.select([read], [], [], 30)[0]:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    out.append(json.loads(b"".join(chunks)) if chunks else None)
json.dump(out, open(sys.argv[3], "w"))
'''

OPTIONS = ["3", "5", "7", "9"]
# (response, the option letter it should name or the value it states, whether it names a letter)
_LETTER_RESPONSES = ["B", " b ", "B:", "B: the moments balance", "B. The moments balance", "(B)", "The answer is B.",
                     "The correct answer is (B)", "So the answer should be B.\nDone.", "answer: B", "Answer: B",
                     "\\boxed{B}", "\\boxed{\\text{B}}", "The final answer is $\\boxed{B}$", "I would pick B",
                     "C", "The answer is C.", "\\boxed{C}", "Option B or C", ""]
_VALUE_RESPONSES = ["{v}", " {v} ", "\\boxed{{{v}}}", "$\\boxed{{{v}}}$", "The answer is {v}.", "answer: {v}",
                    "The final answer is {v}\nbecause", "so the answer should be {v}. ok", "\\boxed{{x = {v}}}",
                    "\\boxed{{{v}.}}", "\\boxed{{{v}\\,}}", "\\boxed{{~{v}}}", "\\boxed{{{v})}}", "\\boxed{{{v}:}}",
                    "\\boxed{{{v}\\\\\\\\}}", "\\boxed{{{v}...}}", "I think it is {v}", "\\boxed{{{v} \\text{{ kg}}}}"]
_OPEN_CASES = [("5", ["5", "5.0", "5.004", "5.02", "\\frac{10}{2}", "\\sqrt{25}", "five", "\\dfrac{15}{3}", "4.99"]),
               ("0.5", ["\\frac{1}{2}", "50\\%", "50%", "0.5", "\\tfrac{1}{2}", "1/2"]),
               ("1000", ["1,000", "1000", "10^{3}", "1e3", "1,2"]),
               ("20", ["20.", "20", "2", "twenty", "\\boxed{20}"]),
               ("3.14", ["\\pi", "3.14159", "e", "3.1"]),
               ("2.72", ["e", "2.718"]),
               ("7", ["seven", "Seven", "7", "7^{1}", "x = 7", "2x = 14", "7^{4}.5", "7:"]),
               ("12", ["\\frac{24}{2}", "12", "1.2.3", "12\\,", "+12"]),
               ("-4", ["-4", "- 4", "-\\frac{8}{2}", "~-4]", "negative four"]),
               ("6", ["2 3", "2 \\cdot 3", "23", "1 000", "69.805 2"])]


def _records() -> list[dict[str, Any]]:
    """The generated inputs, in EMMA's record fields."""
    records: list[dict[str, Any]] = []
    for number, response in enumerate(_LETTER_RESPONSES):
        records.append({"pid": f"Math_gen{number}", "subject": "Math", "type": "Multiple Choice", "options": OPTIONS,
                        "answer": "B", "gt_content": "5", "response": response})
    for number, (template, value) in enumerate(itertools.product(_VALUE_RESPONSES, ["5", "\\frac{5}{1}"])):
        records.append({"pid": f"Physics_gen{number}", "subject": "Physics", "type": "Multiple Choice",
                        "options": OPTIONS, "answer": "B", "gt_content": "5", "response": template.format(v=value)})
    number = 0
    for gold, answers in _OPEN_CASES:
        for answer in answers:
            for template in ("\\boxed{{{v}}}", "The answer is {v}."):
                records.append({"pid": f"Chemistry_gen{number}", "subject": "Chemistry", "type": "Open-ended",
                                "options": None, "answer": gold, "gt_content": gold,
                                "response": template.format(v=answer)})
                number += 1
    code = ["\\boxed{\\text{A}}", "The correct answer is A", "\\boxed{A}", "A. plot()", "def f(): pass"]
    for number, response in enumerate(code):
        records.append({"pid": f"Coding_gen{number}", "subject": "Coding", "type": "Multiple Choice",
                        "options": ["plot()", "show()"], "answer": "A", "gt_content": "plot()", "response": response})
    return records


def _run(python: str, folder: Path, records: list[dict[str, Any]]) -> list[Any]:
    with tempfile.TemporaryDirectory() as scratch:
        given, taken = Path(scratch) / "records.json", Path(scratch) / "scored.json"
        given.write_text(json.dumps(records))
        subprocess.run([python, "-c", _CHILD, str(folder), str(given), str(taken)], check=True)
        scored: list[Any] = json.loads(taken.read_text())
        return scored


def _checkout(git_dir: Path, commit: str, into: Path) -> None:
    """evaluate.py and utils.py of `commit` into `into` (what the child imports)."""
    from scripts.conformance_fixtures import git_show

    into.mkdir(parents=True)
    for name in ("evaluate.py", "utils.py"):
        (into / name).write_bytes(git_show(git_dir, commit, f"evaluation/{name}"))


def emma(git_dir: Path, commit: str, first_release_git_dir: Path | None, python: str) -> None:
    """Write tests/fixtures/conformance/emma_verdicts.subset.jsonl.gz."""
    from scripts.conformance_fixtures import EMMA_FIRST_RELEASE_COMMIT, FIXTURES, commit_of, write_jsonl_gz

    if first_release_git_dir is None:
        raise SystemExit("emma needs --first-release-git-dir (hychaochao/EMMA's git directory)")
    current, first = commit_of(git_dir, commit), commit_of(first_release_git_dir, EMMA_FIRST_RELEASE_COMMIT)
    records = _records()
    with tempfile.TemporaryDirectory() as scratch:
        _checkout(git_dir, current, Path(scratch) / "current")
        _checkout(first_release_git_dir, first, Path(scratch) / "first")
        new = _run(python, Path(scratch) / "current", records)
        old = _run(python, Path(scratch) / "first", records)
    source = "generated here: scripts/_official_emma.py"
    written = []
    for record, scored_new, scored_old in zip(records, new, old):
        if scored_new is None or scored_old is None:
            continue  # did not finish in 30 s: no verdict to pin
        base = {**record, "category": record["subject"], "query": None, "gpt_eval": None, "source_file": source}
        if scored_new[1] == scored_old[1]:
            written.append({**base, "extraction": scored_new[0], "true_false": scored_new[1],
                            "scoring_rule_of_file": "fast_eval(both versions agree)"})
            continue
        written.append({**base, "extraction": scored_new[0], "true_false": scored_new[1],
                        "scoring_rule_of_file": f"fast_eval_new(EMMA-Bench/EMMA@{current[:7]})"})
        written.append({**base, "extraction": scored_old[0], "true_false": scored_old[1],
                        "scoring_rule_of_file": f"fast_eval_old(hychaochao/EMMA@{first[:7]})"})
    count = write_jsonl_gz(FIXTURES / "emma_verdicts.subset.jsonl.gz", written)
    differ = sum(r["scoring_rule_of_file"].startswith("fast_eval_new") for r in written)
    print(f"emma: {count} records from {len(records)} generated inputs; {differ} inputs where the current "
          f"(EMMA-Bench/EMMA@{current}) and first-release (hychaochao/EMMA@{first}) verdicts differ")
