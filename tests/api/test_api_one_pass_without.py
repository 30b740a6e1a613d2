"""`solve` and `evaluate` take `without` as any iterable: a one-pass one (a generator) is the
same steps left out as a list, both where it is checked and where the run uses it."""

from __future__ import annotations

from pathlib import Path

import maps_autogen
from maps_autogen.records._chat_records import MessageRecord
from maps_autogen.records._run_files import read_manifest, read_transcript
from tests.helpers.common import REPO, make_png
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.python_api import service  # noqa: F401 - the scripted server fixture


def test_a_generator_without_leaves_the_step_out_of_solve_and_evaluate(service: FakeOpenAI,
                                                                       tmp_path: Path) -> None:
    png = make_png(tmp_path / "lever.png")
    problem = maps_autogen.Problem("Which mass balances the lever?", options=["2 kg", "4 kg"], images=[png])
    result = maps_autogen.solve(problem, runs_dir=tmp_path / "runs", without=(step for step in ["aligner"]))
    roles = {line.role for line in read_transcript(result.run_dir) if isinstance(line, MessageRecord)}
    assert "aligner" not in roles and "solver" in roles

    outcome = maps_autogen.evaluate("custom", data=REPO / "examples" / "bench.jsonl", limit=1,
                                    runs_dir=tmp_path / "runs", without=(step for step in ["aligner"]))
    assert read_manifest(outcome.eval_dir).without == ["aligner"]
