"""Write tests/fixtures/conformance/: the small, attributed conformance set that ships with the
project, so a clone without ../shared runs its conformance tests (tests/fixtures/conformance/
README.md says what each file holds, where it comes from and under which licence).

- MathVista (CC BY-SA 4.0): records taken from the official result files of
  lupantech/MathVista (results/*/output_*.json, their `extraction`, `prediction` and
  `true_false`), every rule family of each file, each checked against ../shared's record.
- EMMA (its repositories carry no licence, so nothing of theirs is copied): responses we
  generate here, scored by EMMA's own evaluation code (evaluate.py's fast extraction and
  utils.py's is_equal with latex2sympy2) run here, current and first release.
- OlympiadBench (MIT): the judge's own examples (eval/scoring_examples.json) and answers we
  generate here, each with the verdict of the official pipeline (inference/judge.py's
  extraction and tolerance, code/math_judger.py) run here with sympy 1.12 and ANTLR 4.11.

The official code is read from git directories (a clone or mirror of each repository, at a
named commit) and run in a separate interpreter (`--python`: EMMA needs latex2sympy2 1.9.1,
which pins ANTLR 4.7.2, so not this project's environment); nothing of it is written here.

    python scripts/conformance_fixtures.py mathvista --git-dir MATHVISTA.git [--commit C]
    python scripts/conformance_fixtures.py emma --git-dir EMMA.git --first-release-git-dir HYCHAOCHAO-EMMA.git \
        --python PY
    python scripts/conformance_fixtures.py olympiadbench --git-dir OLYMPIADBENCH.git [--python PY]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
FIXTURES = REPO / "tests" / "fixtures" / "conformance"
SHARED = next((folder / "shared" / "conformance" for folder in REPO.parents
               if (folder / "shared" / "conformance").is_dir()), REPO.parent / "shared" / "conformance")

MATHVISTA_COMMIT = "53d525874bdde205128e6b160b7357a88277d479"
EMMA_COMMIT = "50609fd4d7e4ce03124092b3862e10654b3b7cda"
EMMA_FIRST_RELEASE_COMMIT = "838b6de"  # hychaochao/EMMA, the commit ../shared names for the first release
OLYMPIADBENCH_COMMIT = "ba5b26a7e2849940b598a9159c1190daa2b9175f"

MATHVISTA_FILES = ["bard/output_bard", "chatgpt/output_chatgpt", "chatgpt/output_chatgpt_2shot_code",
                   "chatgpt/output_chatgpt_2shot_code_use_ocr", "chatgpt/output_chatgpt_2shot_solution",
                   "chatgpt/output_chatgpt_2shot_solution_use_ocr", "claude/output_claude",
                   "claude/output_claude_2shot_solution", "claude/output_claude_2shot_solution_use_ocr",
                   "idefics/output_idefics_9b_instruct", "instruct_blip2/output_instruct_blip2_vicuna_13b",
                   "random/output_frequent_guess", "random/output_random_guess"]
# The records the conformance tests name (tests/scoring/test_conformance_mathvista.py), by file and pid.
MATHVISTA_NAMED = [("output_claude", "23"), ("output_chatgpt", "316"), ("output_claude_2shot_solution", "514"),
                   ("output_bard", "321"), ("output_idefics_9b_instruct", "950"), ("output_bard", "435"),
                   ("output_chatgpt", "873"), ("output_chatgpt_2shot_solution_use_ocr", "241"), ("output_bard", "662"),
                   ("output_bard", "353"), ("output_bard", "719"), ("output_claude", "638"), ("output_bard", "617"),
                   ("output_chatgpt_2shot_solution", "629"), ("output_chatgpt_2shot_code_use_ocr", "58"),
                   ("output_chatgpt_2shot_code_use_ocr", "461"), ("output_chatgpt_2shot_code", "564"),
                   ("output_chatgpt_2shot_code", "120"), ("output_chatgpt_2shot_code_use_ocr", "622"),
                   ("output_chatgpt_2shot_code", "713"), ("output_chatgpt_2shot_code", "217"),
                   ("output_chatgpt", "523"), ("output_chatgpt_2shot_solution_use_ocr", "173"),
                   ("output_chatgpt", "308"), ("output_chatgpt_2shot_solution_use_ocr", "177")]
MATHVISTA_PER_FAMILY = 2  # records per rule family and file (the named ones come on top)


def git_show(git_dir: Path, commit: str, path: str) -> bytes:
    """A file of a repository at a commit, from its git directory."""
    return subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], check=True,
                          capture_output=True).stdout


def commit_of(git_dir: Path, commit: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", commit], check=True, capture_output=True,
                          text=True).stdout.strip()


def write_jsonl_gz(path: Path, records: Iterable[dict[str, Any]]) -> int:
    lines = [json.dumps(record, ensure_ascii=False, sort_keys=True) for record in records]
    with gzip.GzipFile(path, "wb", mtime=0) as stream:  # the same bytes for the same records
        stream.write(("\n".join(lines) + "\n").encode())
    return len(lines)


def read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.strip()]


# --------------------------------------------------------------------------------------------
# MathVista: taken from the official result files
# --------------------------------------------------------------------------------------------


def _integer_rule(records: list[dict[str, Any]]) -> str:
    """Which integer rule reproduces a file's predictions: "int_only(pre-2024 code)", "int_float"
    or "both_rules_agree" (the label ../shared gives each file)."""
    from maps_autogen.benchmarks.mathvista._scorer import normalize

    agree = Counter()
    for record in records:
        for rules in ("current", "legacy"):
            agree[rules] += normalize(record["extraction"], question_type=record["question_type"],
                                      answer_type=record["answer_type"], choices=record["choices"],
                                      precision=record["precision"], rules=rules) == record["prediction"]
    if agree["current"] == agree["legacy"] == len(records):
        return "both_rules_agree"
    return "int_only(pre-2024 code)" if agree["legacy"] == len(records) else "int_float"


def _family(record: dict[str, Any]) -> str:
    """The rule family a record exercises (what the official normalisation does with it)."""
    extraction = str(record["extraction"] or "").strip()
    if record["question_type"] == "multi_choice":
        choices = record["choices"] or []
        if extraction in choices:
            kind = "option text"
        elif len(extraction) == 1 and extraction.upper() in "ABCDEFGH":
            kind = "letter"
        elif extraction.startswith("(") and extraction[1:2].isalpha():
            kind = "(letter)"
        else:
            kind = "nearest option" if extraction else "no answer"
        return f"choice/{kind}/{record['true_false']}"
    prediction = record["prediction"]
    kind = "failed" if prediction is None else "read"
    if record["answer_type"] == "integer" and prediction is None and "." in extraction:
        kind = "integer with decimals"
    return f"{record['answer_type']}/p{record['precision']}/{kind}/{record['true_false']}"


def mathvista(git_dir: Path, commit: str) -> None:
    commit = commit_of(git_dir, commit)
    full = read_jsonl_gz(SHARED / "mathvista_testmini_verdicts.dev.jsonl.gz")
    shared = {(r["source_file"], r["pid"]): r for r in full}
    rng = random.Random(0)
    chosen: list[dict[str, Any]] = []
    for name in MATHVISTA_FILES:
        path = f"results/{name}.json"
        source = f"lupantech/MathVista:{path}"
        outputs = json.loads(git_show(git_dir, commit, path))
        records = [{"source_file": source, "pid": pid, "question_type": row["question_type"],
                    "answer_type": row["answer_type"], "precision": row["precision"], "choices": row["choices"],
                    "unit": row["unit"], "answer": row["answer"], "category": row["metadata"]["category"],
                    "query": row.get("query"), "response": row["response"], "extraction": row["extraction"],
                    "prediction": row["prediction"], "true_false": row["true_false"]}
                   for pid, row in outputs.items() if (source, pid) in shared]
        rule = _integer_rule(records)
        by_family: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            record["integer_rule_of_file"] = rule
            by_family.setdefault(_family(record), []).append(record)
        short = name.split("/")[-1]
        named = {pid for file, pid in MATHVISTA_NAMED if file == short}
        picked = [r for r in records if r["pid"] in named]
        for family in sorted(by_family):
            members = [r for r in by_family[family] if r["pid"] not in named and len(r["response"] or "") < 3000]
            picked += rng.sample(members, min(MATHVISTA_PER_FAMILY, len(members)))
        for record in picked:
            theirs = shared[(record["source_file"], record["pid"])]
            assert record == theirs, f"{source} pid {record['pid']} differs from ../shared: " + ", ".join(
                key for key in record if record[key] != theirs.get(key))
        chosen += sorted(picked, key=lambda r: int(r["pid"]))
    count = write_jsonl_gz(FIXTURES / "mathvista_testmini_verdicts.subset.jsonl.gz", chosen)
    print(f"mathvista: {count} records from {len(MATHVISTA_FILES)} files of lupantech/MathVista@{commit}, "
          f"each equal to its ../shared record")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("benchmark", choices=["mathvista", "emma", "olympiadbench"])
    parser.add_argument("--git-dir", type=Path, required=True, help="the benchmark repository's git directory")
    parser.add_argument("--commit", help="the commit to read (default: the one the fixtures name)")
    parser.add_argument("--first-release-git-dir", type=Path, help="EMMA: hychaochao/EMMA's git directory")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs the official code")
    args = parser.parse_args(argv)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    if args.benchmark == "mathvista":
        mathvista(args.git_dir, args.commit or MATHVISTA_COMMIT)
    elif args.benchmark == "emma":
        from scripts._official_emma import emma

        emma(args.git_dir, args.commit or EMMA_COMMIT, args.first_release_git_dir, args.python)
    else:
        from scripts._official_olympiadbench import olympiadbench

        olympiadbench(args.git_dir, args.commit or OLYMPIADBENCH_COMMIT, args.python)


if __name__ == "__main__":
    main()
