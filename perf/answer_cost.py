"""Tokens and cost per correct answer on the shipped custom benchmark (examples/bench.jsonl), MAPS
beside the CoT baseline in the same run (a script that prints, not a test): the figure a user
weighs MAPS against one call with.

    .venv/bin/python perf/answer_cost.py            # the embedded offline model (minutes, free)
    .venv/bin/python perf/answer_cost.py --short    # CI: the scripted server, every answer right

Both methods run `maps eval custom --data examples/bench.jsonl` on the same model; the figures
are `maps report`'s (eval/_answer_cost.py): per method, accuracy, then prompt tokens (of them
cached), completion tokens, calls and cost per problem and per correct answer. Two problems:
a figure of how MAPS spends tokens on this model, not of its accuracy in general.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from maps_autogen.cli import main as maps_main  # noqa: E402
from maps_autogen.eval import answer_costs, load_run  # noqa: E402
from tests.helpers.common import critic_json, solver_json  # noqa: E402
from tests.helpers.fake_openai import FakeOpenAI, Received, Reply  # noqa: E402

DATA = ROOT / "examples" / "bench.jsonl"
METHODS = ("maps", "cot")


def right_answers(request: Received) -> Reply:
    """The scripted server's reply: each problem's right answer (the lever's B, the circuit's 4),
    every review passing, the other steps' notes."""
    text = json.dumps(request.body.get("messages", []))
    answer = "B" if "lever" in text else "4"
    if request.role == "solver":
        return Reply(solver_json(answer))
    if request.role == "critic":
        return Reply(critic_json())
    if request.role == "cot":
        return Reply(f"Reasoning from the diagram and the given values. The answer is {answer}.")
    return Reply("Notes on the diagram and the question.")


def run_eval(runs: Path, method: str, model: list[str]) -> Path:
    """One `maps eval custom` of the shipped rows; its eval folder."""
    folder = runs / method
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            maps_main(["eval", "custom", "--data", str(DATA), "--method", method, "--runs-dir", str(folder),
                       "--no-cache", "--quiet", *model])
    except SystemExit as stop:
        if stop.code:
            failed = f"maps eval --method {method} failed ({stop.code})"
            raise RuntimeError(f"{failed}:\n{said.getvalue()[-2000:]}") from None
    return next(folder.glob("eval-*"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the scripted server (CI)")
    short = parser.parse_args().short
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        runs = Path(folder)
        if short:
            server = stack.enter_context(FakeOpenAI(right_answers))
            os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-perf-answer-cost")
            model: list[str] = []
            where = "the scripted server"
        else:
            model, where = ["--model", "local"], "the embedded offline model"
        costs = answer_costs([load_run(run_eval(runs, method, model)) for method in METHODS])
    print(f"examples/bench.jsonl, {where}:")
    for row in costs:
        per_problem, per_correct = row.per(row.problems), row.per(row.correct)
        accuracy = "–" if row.accuracy is None else f"{row.accuracy:.0f}%"  # accuracy is in percent
        for name, shares in (("per problem", per_problem), ("per correct answer", per_correct)):
            shown = {key: "–" if value is None else value for key, value in shares.items()}  # no correct answer
            print(f"{row.label}: accuracy {accuracy} ({row.correct}/{row.scored}); {name}: "
                  f"prompt tokens {shown['prompt_tokens']} (cached {shown['cached_tokens']}), "
                  f"completion tokens {shown['completion_tokens']}, calls {shown['calls']}, cost {shown['cost']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
