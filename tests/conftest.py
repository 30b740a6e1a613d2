"""Shared test helpers: the scripted server, images, running the real `maps` command."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.common import make_png
from tests.helpers.conformance import report_line


def pytest_report_header(config: pytest.Config) -> str:
    """Which conformance data the run reads: the bundled subset always, the full sets where found."""
    return report_line()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The embedded-model tests first (order otherwise kept): the full chat on the local model
    runs for minutes, so under xdist it starts at once and the other workers share the rest.
    (Queueing the real servers' tests right behind them, so that each module's servers start
    once, made the first worker the suite's critical path: 10 min 31 s became 12 min 8 s.)"""
    items.sort(key=lambda item: item.get_closest_marker("local") is None)


@pytest.fixture
def png(tmp_path: Path) -> Path:
    return make_png(tmp_path / "lever.png")
