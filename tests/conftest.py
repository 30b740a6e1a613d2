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
    """The embedded-model tests first, then the real servers' (order otherwise kept): the full chat
    on the local model runs for minutes, so under xdist it starts at once and the other workers
    share the rest; the real servers' tests follow it on the first worker's queue, whose front
    the others never take (`--dist worksteal` takes from the end), so a module's servers (a
    LiteLLM proxy is 10 s of CPU to start) start once rather than once per worker."""
    def place(item: pytest.Item) -> int:
        real_server = item.get_closest_marker("real_server") is not None
        return 0 if item.get_closest_marker("local") and not real_server else 1 if real_server else 2

    items.sort(key=place)


@pytest.fixture
def png(tmp_path: Path) -> Path:
    return make_png(tmp_path / "lever.png")
