"""Shared by the tests of tests/project/test_readme_commands.py and others: fake_service."""

from __future__ import annotations

from tests.helpers.common import critic_json, solver_json
from tests.helpers.fake_openai import RoleScript


def fake_service() -> RoleScript:
    """Every role answers as a whole team would: the reviewer passes everything at once."""
    return RoleScript({
        "interpreter": ["A lever on a pivot with a mass on each side."],
        "aligner": ["The lever is balanced: torques about the pivot are equal."],
        "scholar": ["Torque balance: m1 d1 = m2 d2."],
        "solver": [solver_json("A")],
        "critic": [critic_json(5, 5, 5, 5)],
    })
