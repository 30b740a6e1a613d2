"""Shared by the tests of tests/e2e/test_renamed_team.py and others: write_renamed_team."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.helpers.common import REPO

NEW_NAMES = {"interpreter": "describer", "aligner": "fuser", "scholar": "expert", "solver": "reasoner", "critic": "judge"}


def write_renamed_team(folder: Path) -> Path:
    """agents.yaml: the default team with every step renamed (labels, inputs and reviews follow)."""
    data = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").read_text())
    for step in data["team"]["steps"]:
        step["name"] = NEW_NAMES[step["name"]]
        step["inputs"] = [NEW_NAMES.get(name, name) for name in step["inputs"]]
        if "reviews" in step:
            step["reviews"] = [NEW_NAMES[name] for name in step["reviews"]]
        if "label" in step:
            step["label"] = f"Notes of the {step['name']}"
    path = folder / "agents.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
