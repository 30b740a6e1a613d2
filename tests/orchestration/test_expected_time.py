"""The estimate announced before a solve on the embedded model (solving.expected_time) counts
the calls the chat can make: the steps and the review, then each rollback re-running every
working step and reviewed again, the last one only with the final review (the live view's
count, flow.calls_left). With the final review off, every rollback but the last is still
reviewed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from maps_autogen.orchestration._time import expected_time
from maps_autogen.settings._config import load_config
from maps_autogen.settings._endpoints import EMBEDDED_MODEL_LABEL


def team_on_embedded_model(folder: Path, critic: dict[str, Any]) -> Any:
    """What expected_time reads of an assembled team: the loaded config (with `critic`) and
    every step on the embedded model."""
    (folder / "agents.yaml").write_text(f"critic: {critic}\n".replace("'", ""))
    loaded = load_config(folder / "agents.yaml", folder)
    models = {name: SimpleNamespace(model=EMBEDDED_MODEL_LABEL) for name in loaded.team.config.names}
    return SimpleNamespace(loaded=loaded, resolution=SimpleNamespace(models=models))


@pytest.mark.parametrize(("critic", "calls"), [
    # 4 working steps and the reviewer: 5 calls at least; each rollback 4 more, and its review.
    ({"max_rollbacks": 3, "final_review": True}, "5 to 20 calls"),
    ({"max_rollbacks": 3, "final_review": False}, "5 to 19 calls"),
    ({"max_rollbacks": 1, "final_review": False}, "5 to 9 calls"),
    ({"max_rollbacks": 0, "final_review": True}, "5 to 5 calls"),
])
def test_the_estimate_counts_every_review_a_chat_can_make(tmp_path: Path, critic: dict[str, Any], calls: str) -> None:
    estimate = expected_time(team_on_embedded_model(tmp_path, critic))
    assert estimate is not None and f": {calls} to the embedded model" in estimate
