"""Shared by the tests of tests/api/test_python_api.py and others: service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.common import api_service
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.solve_cli import rollback_script  # the Critic sends the Scholar back once


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAI]:
    """The scripted server as the model service, in an empty working folder (no ./agents.yaml);
    what a solve leaves in this process (registered keys, connection pools) is undone after."""
    with api_service(monkeypatch, tmp_path, rollback_script()) as server:
        yield server
