"""The Inspect scorer under the scorers' bounds: a response that cannot be judged within them is
INCORRECT and its explanation says why; a scorer that fails on one sample leaves that sample
without a verdict (unscored, the reason kept), never failing the task or counting as wrong;
the scoring runs off the event loop."""

from __future__ import annotations

import asyncio
import math
import os
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from maps_autogen.problem._problem import Problem
from maps_autogen.problem._tasks import EvalItem

if os.environ.get("CI") == "true":  # CI installs the inspect extra (scripts/setup.sh): missing is a failure
    from inspect_ai.scorer import CORRECT, INCORRECT, Target
else:
    scorer_module = pytest.importorskip("inspect_ai.scorer")
    CORRECT, INCORRECT, Target = scorer_module.CORRECT, scorer_module.INCORRECT, scorer_module.Target

from maps_autogen.benchmarks import get_benchmark
from maps_autogen.inspect_tasks import _solver as solver
from maps_autogen.inspect_tasks._solver import STORE_KEY, official_scorer


@dataclass
class Store:
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass
class State:
    """What the scorer reads of Inspect's TaskState: the sample's id and store."""

    sample_id: str
    store: Store


def item(pid: str, record: dict[str, Any], gold: str) -> EvalItem:
    return EvalItem(pid=pid, subset="all", load_problem=lambda: Problem("q"), record=record, gold=gold)


def score(benchmark: str, items: dict[str, EvalItem], pid: str, response: str) -> Any:
    scorer = official_scorer(get_benchmark(benchmark).task, items)
    state = State(pid, Store({STORE_KEY: {"response": response, "final_answer": response}}))

    async def run() -> Any:
        return await scorer(state, Target(items[pid].gold))

    return asyncio.run(run())


def test_the_scoring_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[int] = []
    real = solver.score_record
    monkeypatch.setattr(solver, "score_record", lambda *args: threads.append(threading.get_ident()) or real(*args))
    items = {"n1": item("n1", {"id": "n1", "answer": "6", "answer_type": "number"}, "6")}
    assert score("custom", items, "n1", "6").value == CORRECT
    assert threads and threads[0] != threading.get_ident()  # asyncio.run's loop runs in this thread


def test_an_unjudgeable_response_is_incorrect_and_says_why() -> None:
    items = {"n1": item("n1", {"id": "n1", "answer": "6", "answer_type": "number"}, "6")}
    result = score("custom", items, "n1", "roughly 6.5e+271828 units")
    assert result.value == INCORRECT
    assert "not judged within the scorers' bounds" in result.explanation and "power of ten" in result.explanation
    assert "power of ten" in result.metadata["unjudged"]
    assert score("custom", items, "n1", "6").value == CORRECT


def test_a_scorer_failing_on_one_sample_leaves_it_unscored_not_wrong() -> None:
    # A float answer without its number of decimals: the official rules cannot normalise it.
    broken = {"pid": "f1", "question_type": "free_form", "answer_type": "float", "precision": None, "answer": "1.5"}
    items = {"f1": item("f1", broken, "1.5")}
    result = score("mathvista", items, "f1", "1.5")
    assert math.isnan(result.value)  # Inspect's unscored: out of every metric, never counted as wrong
    assert "the scorer failed on this sample: RecordError" in result.explanation and "precision" in result.explanation
