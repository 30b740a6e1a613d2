"""Shared by the tests of tests/e2e/test_real_servers.py and others: server_config."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.common import write_config
from tests.helpers.real_servers import ALIAS


def server_config(folder: Path, base_url: str, *, key_env: str | None = None, model: str = ALIAS, **changes) -> Path:
    """agents.yaml for a user's own OpenAI-compatible server: short replies (the steps' own
    budgets dropped, so model.max_tokens applies to all), one review."""
    return write_config(folder / "agents.yaml", **{
        "endpoints.openai.base_url": base_url, "endpoints.openai.api_key_env": key_env,
        "endpoints.openai.default_model": model, "endpoints.openai.max_retries": 1,
        "model.max_tokens": 48, "critic.max_rollbacks": 0, **{f"team.steps.{index}.model": None for index in range(5)}, **changes})
