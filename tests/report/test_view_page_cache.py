"""`maps view --serve`'s page cache renders one page at a time per page, not one page at a
time in all: while a slow page (a large eval's index) renders, another page is served."""

from __future__ import annotations

import threading
from pathlib import Path

from maps_autogen.report.view._page_cache import PageCache


def test_a_page_being_rendered_holds_up_no_other_page(tmp_path: Path) -> None:
    cache = PageCache()
    rendering, release, other_served = threading.Event(), threading.Event(), threading.Event()

    def slow() -> tuple[str, list[Path]]:
        rendering.set()
        assert release.wait(10)
        return "index", []

    slow_thread = threading.Thread(target=lambda: cache.get("index", [tmp_path], slow))
    other_thread = threading.Thread(
        target=lambda: (cache.get("problem q1", [tmp_path], lambda: ("q1", [])), other_served.set())
    )
    slow_thread.start()
    try:
        assert rendering.wait(10)
        other_thread.start()
        assert other_served.wait(10), "the other page waited for the slow one"
    finally:
        release.set()
        slow_thread.join(10)
        other_thread.join(10)
    assert cache.renders == {"index": 1, "problem q1": 1}
