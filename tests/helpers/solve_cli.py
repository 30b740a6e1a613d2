"""Shared by the tests of tests/cli/test_solve_cli.py and others: rollback_script, solve_args."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.common import (
    critic_json,
    solver_json,
)
from tests.helpers.fake_openai import RoleScript


def rollback_script() -> RoleScript:
    return RoleScript({
        "interpreter": ["CAPTION: a lever, 2 kg at 1 m on the left."],
        "aligner": ["ALIGNED: lever in balance, find the right mass at 0.5 m."],
        "scholar": ["KNOWLEDGE v1: forces add up.", "KNOWLEDGE v2: torques balance, m1 d1 = m2 d2."],
        "solver": [solver_json("A"), solver_json("B")],
        "critic": [critic_json(5, 4, 2, 3, worst="knowledge", feedback={"knowledge": "Which quantity must balance on a lever?"}),
                   critic_json(5, 5, 5, 5)],
    })


def solve_args(png: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["solve", str(png), "-q", "Which mass balances the lever?", "-c", "The lever is light.",
            "-o", "2 kg", "-o", "4 kg", "--runs-dir", str(tmp_path / "runs"), *extra]
