"""OlympiadBench's part of scripts/conformance_fixtures.py: the judge's own examples
(eval/scoring_examples.json, MIT) with the official judge's verdict in both argument orders, and
answers we generate for ground truths we write, one group per rule family of the official judge,
each with the verdict of the official pipeline run in `--python` (this project's environment has
the official stack: sympy 1.12, ANTLR 4.11): inference/judge.py's extraction of the final
answer, its reading of `error`, and code/math_judger.py's MathJudger.judge(model answer, ground
truth, precision). Each record is judged in a forked child, killed after 60 s."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

# Run in the official interpreter with inference/ and inference/code/ on its path. The pipeline's
# glue (judge.py's judge_result, per record): Tuple answers judged with the default precision;
# otherwise a true `error` is a comma list (blank: 1e-8) or a float, a false one the default.
_CHILD = r'''
import json, os, select, sys, warnings
warnings.filterwarnings("ignore")
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "code")]
from judge import extract_answer
from math_judger import MathJudger
judger = MathJudger()

def pipeline(record):
    answer = extract_answer(record["language"] == "Chinese", record["response"])
    truth = record["final_answer"][0]
    if "Tuple" in record["answer_type"]:
        return judger.judge(answer, truth)
    if record["error"]:
        if "," in record["error"]:
            precisions = [float(p) if p else 1e-8 for p in record["error"].split(",")]
            return judger.judge(answer, truth, precisions)
        return judger.judge(answer, truth, float(record["error"]))
    return judger.judge(answer, truth)

def both_orders(example):
    def extra():  # a new list each call: the judge consumes a list of precisions
        precision = example["precision"]
        if precision is None:
            return ()
        return (float(precision) if isinstance(precision, str) else list(precision) if isinstance(precision, list)
                else precision,)
    return [judger.judge(example["answer"], example["gt"], *extra()),
            judger.judge(example["gt"], example["answer"], *extra())]

work = pipeline if sys.argv[4] == "pipeline" else both_orders
out = []
for item in json.load(open(sys.argv[2])):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            os.write(write, json.dumps(work(item)).encode())
        finally:
            os._exit(0)
    os.close(write)
    ready = select.select([read], [], [], 60)[0]
    data = os.read(read, 4096) if ready else b""
    os.close(read)
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    out.append(json.loads(data) if data else None)
json.dump(out, open(sys.argv[3], "w"))
'''

# (ground truth, answer_type, error, unit, candidate final answers): one group per rule family.
_FAMILIES: list[tuple[str, str, str | None, str | None, list[str]]] = [
    ("$\\frac{3}{8}$", "Numerical", None, None, ["\\frac{3}{8}", "0.375", "\\frac{6}{16}", "0.37", "37.5", "3/8"]),
    ("$2.5$", "Numerical", "0.1", None, ["2.55", "2.6", "2.61", "250", "0.025", "2.4"]),
    ("$12$", "Numerical", "0", None, ["12", "12.0000000001", "12.1"]),
    ("$1.5, 4$", "Numerical", "0.1,", None, ["1.55, 4", "4, 1.5", "1.5", "1.5, 4.05", "1.5, 4, 7"]),
    ("$\\sqrt{2}$", "Numerical", None, None, ["1.41421356", "\\sqrt{2}", "\\frac{2}{\\sqrt{2}}", "1.414", "2^{1/2}"]),
    ("$3 \\times 10^{8}$", "Numerical", None, "m/s", ["3 \\times 10^{8}", "300000000", "3e8", "3.0 \\times 10^8"]),
    ("$30^{\\circ}$", "Numerical", None, None, ["30^{\\circ}", "30^\\circ", "30", "\\frac{\\pi}{6}"]),
    ("$45\\%$", "Numerical", None, None, ["45\\%", "45", "0.45", "45%"]),
    ("$\\frac{m g}{2}$", "Expression", None, None, ["\\frac{g m}{2}", "0.5 m g", "\\frac{mg}{2}", "m g",
                                                   "\\frac{m g}{2.001}", "\\frac{m g}{2.01}"]),
    ("$\\sqrt{\\frac{2 g h}{3}}$", "Expression", None, None, ["\\sqrt{\\frac{2gh}{3}}", "\\sqrt{2 g h / 3}",
                                                             "\\frac{\\sqrt{6 g h}}{3}", "\\sqrt{\\frac{g h}{3}}"]),
    ("$v_{0} \\cos \\theta$", "Expression", None, None,
     ["v_0 \\cos\\theta", "\\cos \\theta v_{0}", "v_{0} \\sin \\theta"]),
    ("$r^{2}_{0}$", "Expression", None, None, ["r_0^2", "r^{2}_{0}", "r_{0}^{2}", "r^2"]),
    ("$d g$", "Expression", None, None, ["g d", "d g", "dg"]),
    ("$e^{2}$", "Expression", None, None, ["e^2", "7.389", "e \\cdot e"]),
    ("$x=2 y+1$", "Equation", None, None, ["x = 2y + 1", "2x = 4y + 2", "x - 2y = 1", "x = 2y + 1.0001", "2y+1"]),
    ("$y=x^{2}$", "Equation", None, None, ["y = x^2", "3y = 3x^{2}", "x^2 = y", "y = x^{2} + 0.0001"]),
    ("$(1,2]$", "Interval", None, None, ["(1,2]", "(1, 2]", "[1,2]", "x \\in (1, 2]", "(1,2)"]),
    ("$(-\\infty, 0) \\cup (1, +\\infty)$", "Interval", None, None,
     ["(-\\infty, 0) \\cup (1, +\\infty)", "(-\\infty,0)\\cup(1,+\\infty)", "(-\\infty, 0)\\cup (1, \\infty)"]),
    ("$(1, 2, 3)$", "Tuple", "0.5", None, ["(1, 2, 3)", "(1, 2)", "(1, 2, 3, 4)", "(1.1, 2, 3)", "(3, 2, 1)"]),
    ("$2 \\pm \\sqrt{3}$", "Numerical", None, None, ["2 + \\sqrt{3}, 2 - \\sqrt{3}", "2 \\pm \\sqrt{3}",
                                                     "2 - \\sqrt{3}, 2 + \\sqrt{3}", "2 + \\sqrt{3}"]),
    ("$\\frac{1}{2}, \\frac{1}{3}$", "Numerical", None, None, ["\\frac{1}{3}, \\frac{1}{2}", "0.5, 0.333333333",
                                                               "\\frac{1}{2}"]),
    ("$\\left(\\frac{1}{2}\\right)$", "Numerical", None, None, ["\\frac{1}{2}", "(0.5)", "\\left( 0.5 \\right)"]),
    ("$5 \\mathrm{~kg}$", "Numerical", None, "kg", ["5 \\mathrm{~kg}", "5", "5 kg", "5\\text{ kg}"]),
    ("$\\approx 3.14$", "Numerical", "0.01", None, ["3.14", "\\pi", "3.15", "\\approx 3.141"]),
    ("$a_{n}=2 n+1$", "Expression", None, None, ["2n + 1", "a_n = 2n+1", "a_{n} = 1 + 2 n", "2n - 1"]),
    ("$能$", "Need_human_evaluate", None, None, ["能", "不能", "能，因为"]),
]
# How a candidate answer is written into a response (the extraction the pipeline then makes).
_RESPONSES = ["So the final answer is ${a}$.", "So the final answer is \\boxed{{{a}}}.", "The result is $ {a} $",
              "所以最终答案是${a}$", "We obtain \\boxed{{{a}}} at last.", "So the final answer is {a}"]


def _records() -> list[dict[str, Any]]:
    records = []
    number = 0
    for truth, answer_type, error, unit, answers in _FAMILIES:
        for answer_number, answer in enumerate(answers):
            template = _RESPONSES[(number + answer_number) % len(_RESPONSES)]
            language = "Chinese" if template.startswith("所以") else "English"
            records.append({"id": f"gen-{number:04d}", "final_answer": [truth], "answer_type": answer_type,
                            "error": error, "unit": unit, "is_multiple_answer": "," in truth,
                            "language": language, "response": "We work it out.\n" + template.format(a=answer)})
            number += 1
    return records


def _run(python: str, inference: Path, items: list[dict[str, Any]], work: str) -> list[Any]:
    with tempfile.TemporaryDirectory() as scratch:
        given, taken = Path(scratch) / "items.json", Path(scratch) / "scored.json"
        given.write_text(json.dumps(items))
        subprocess.run([python, "-c", _CHILD, str(inference), str(given), str(taken), work], check=True)
        scored: list[Any] = json.loads(taken.read_text())
        return scored


def olympiadbench(git_dir: Path, commit: str, python: str) -> None:
    """Write olympiadbench_official_examples.json and olympiadbench_judged.subset.jsonl."""
    from scripts.conformance_fixtures import FIXTURES, SHARED, commit_of, git_show

    commit = commit_of(git_dir, commit)
    with tempfile.TemporaryDirectory() as scratch:
        inference = Path(scratch) / "inference"
        (inference / "code").mkdir(parents=True)
        (inference / "judge.py").write_bytes(git_show(git_dir, commit, "inference/judge.py"))
        (inference / "code" / "math_judger.py").write_bytes(git_show(git_dir, commit, "inference/code/math_judger.py"))
        themes = json.loads(git_show(git_dir, commit, "eval/scoring_examples.json"))
        examples = [{"gt": theme["GT"], "answer": answer["answer"], "precision": answer.get("precision"),
                     "expected": answer["equal"]} for theme in themes for answer in theme["Ans"]]
        orders = _run(python, inference, examples, "both_orders")
        records = _records()
        verdicts = _run(python, inference, records, "pipeline")
    for example, (answer_first, gt_first) in zip(examples, orders):
        example.update(judge_gt_first=gt_first, judge_answer_first=answer_first)
    shared = json.loads((SHARED / "olympiadbench_official_examples.json").read_text(encoding="utf-8"))
    assert examples == shared, "the official examples' verdicts differ from ../shared's"
    (FIXTURES / "olympiadbench_official_examples.json").write_text(json.dumps(examples, ensure_ascii=False, indent=1)
                                                                  + "\n", encoding="utf-8")
    judged = [{**record, "official_verdict": verdict} for record, verdict in zip(records, verdicts)
              if verdict is not None]
    lines = [json.dumps(record, ensure_ascii=False) for record in judged]
    (FIXTURES / "olympiadbench_judged.subset.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"olympiadbench: {len(examples)} official examples (equal to ../shared's) and {len(judged)} generated "
          f"cases judged by OpenBMB/OlympiadBench@{commit}")
