"""The Python API raises a MapsError (one line naming the argument and the fix) wherever the
command line would, never a raw TypeError or ValueError, never a hang or a silent run of nothing;
a resume refuses every argument its manifest fixes (rules, limit, shard, subsets, sample,
sample_seed) as `maps eval --resume` refuses the options."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import maps_autogen
from maps_autogen._util._errors import ProblemError, UsageError
from tests.helpers.common import TEST_KEY


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing may be sent
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({"id": "p1", "question": "How many?", "answer": "4"}) + "\n")
    return path


def evaluate(data: Path, **arguments: Any) -> Any:
    return maps_autogen.evaluate("custom", data=data, **{"runs_dir": data.parent / "runs", **arguments})


# (argument given, what the one line says)
BAD_EVAL = [
    ({"limit": 0}, r"limit \(--limit\) must be a whole number of at least 1, not 0"),
    ({"limit": -7}, r"limit \(--limit\) must be a whole number of at least 1, not -7"),
    ({"limit": 2.5}, r"limit \(--limit\) must be a whole number"),
    ({"sample": -2}, r"sample \(--sample\) must be a whole number of at least 1, not -2"),
    ({"sample": "10"}, r"sample \(--sample\) must be a whole number"),
    ({"sample_seed": "abc", "sample": 1}, r"sample_seed \(--sample-seed\) must be a whole number, not 'abc'"),
    ({"seed": "abc"}, r"seed \(--seed\) must be a whole number, not 'abc'"),
    ({"seed": True}, r"seed \(--seed\) must be a whole number, not True"),
    ({"temperature": 7}, r"temperature \(--temperature\) must be a number from 0 to 2, not 7"),
    ({"top_p": "1"}, r"top_p \(--top-p\) must be a number above 0 and at most 1, not '1'"),
    ({"max_tokens": 0}, r"max_tokens \(--max-tokens\) must be a whole number of at least 1, not 0"),
    ({"concurrency": 4096}, r"concurrency \(--concurrency\) must be a whole number from 1 to 512"),
    ({"workers": 0}, r"workers \(--workers\) must be a whole number from 1 to 256, not 0"),
    ({"max_cost": -0.5}, r"max_cost \(--max-cost\) must be a number of USD of at least 0, not -0.5"),
    ({"max_cost": float("inf")}, r"max_cost \(--max-cost\) must be a number"),
    ({"shard": 2}, r"shard= must be text of the form i/n, not int"),
    ({"runs_dir": 3.14}, r"runs_dir= must be a path"),
    ({"config": ["agents.yaml"]}, r"config= must be a path"),
    ({"subsets": [1, 2]}, r"subsets= must be a list of names"),
]


@pytest.mark.parametrize(("arguments", "says"), BAD_EVAL, ids=[str(case[0]) for case in BAD_EVAL])
def test_evaluate_refuses_a_bad_argument_in_one_line(data: Path, arguments: dict[str, Any], says: str) -> None:
    with pytest.raises(UsageError, match=says) as refused:
        evaluate(data, **arguments)
    assert "\n" not in str(refused.value)
    assert not (data.parent / "runs").exists()  # refused before anything was written


@pytest.mark.parametrize("arguments", [{"rules": "legacy"}, {"limit": 3}, {"shard": "1/2"}, {"subsets": ["all"]},
                                       {"sample": 5}, {"sample_seed": 11}])
def test_a_resume_refuses_what_its_manifest_fixes(data: Path, arguments: dict[str, Any]) -> None:
    option = {"rules": "--rules", "limit": "--limit", "shard": "--shard", "subsets": "--subset", "sample": "--sample",
              "sample_seed": "--sample-seed"}[next(iter(arguments))]
    with pytest.raises(UsageError, match=rf"{option} cannot change a resumed run"):
        maps_autogen.evaluate("custom", resume=data.parent / "runs" / "eval-x", **arguments)


def test_a_bare_name_is_one_name_not_its_letters(data: Path) -> None:
    with pytest.raises(UsageError, match=r"has no subset 'optics'"):
        evaluate(data, subsets="optics")
    with pytest.raises(UsageError, match=r"no step 'critics'"):
        evaluate(data, without="critics")


BAD_PROBLEMS: list[tuple[Callable[[], Any], str]] = [
    (lambda: maps_autogen.solve(42), "a problem must be a Problem or a problem file's path, not int"),
    (lambda: maps_autogen.solve(["problem.yaml"]), "a problem must be a Problem or a problem file's path, not list"),
    (lambda: maps_autogen.Problem(b"How many?"), "the question must be text, not bytes"),
    (lambda: maps_autogen.Problem("How many?", options=3), "options must be a list of texts, not int"),
    (lambda: maps_autogen.Problem("How many?", options={"A": "2"}), "options must be a list of texts, not dict"),
    (lambda: maps_autogen.Problem("How many?", images=[bytearray()]), "is not a readable image"),
    (lambda: maps_autogen.Problem("How many?", metadata=["x"]), "metadata must be a dict, not list"),
]


@pytest.mark.parametrize(("make", "says"), BAD_PROBLEMS, ids=[case[1][:30] for case in BAD_PROBLEMS])
def test_a_bad_problem_is_a_problem_error(data: Path, make: Callable[[], Any], says: str) -> None:
    with pytest.raises(ProblemError, match=says):
        make()
