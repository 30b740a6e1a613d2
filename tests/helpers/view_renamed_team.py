"""Shared by the tests of tests/report/test_view_renamed_team.py and others: DIMENSIONS, renamed_team."""

from __future__ import annotations

from typing import Any

from tests.helpers.team import steps

RENAMED = {"interpreter": ("seer", "sight"), "aligner": ("framer", "framing"), "scholar": ("sage", "lore"),
           "solver": ("answerer", "reckoning"), "critic": ("judge", None)}


NEW = {old: new for old, (new, _) in RENAMED.items()}


DIMENSIONS = ["sight", "framing", "lore", "reckoning"]


def renamed_team() -> list[dict[str, Any]]:
    team = steps()
    for step in team:
        new, dimension = RENAMED[step["name"]]
        step["name"] = new
        step["inputs"] = [NEW.get(name, name) for name in step["inputs"]]
        if dimension is not None:
            step["critic_dimension"] = dimension
        if "reviews" in step:
            step["reviews"] = [NEW[name] for name in step["reviews"]]
    return team
