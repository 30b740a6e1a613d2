"""maps_autogen.orchestration._ag2 hides openai, matplotlib and networkx from AG2's import only: once AG2 is
imported they import as usual (`maps report` draws with matplotlib in the same process), and
a package imported before is left as it was."""

from __future__ import annotations

import subprocess
import sys

AFTER_AG2 = """
import sys
assert "openai" not in sys.modules and "matplotlib" not in sys.modules
import maps_autogen.orchestration._ag2
left = sorted(name for name in maps_autogen.orchestration._ag2.UNUSED_BY_MAPS if name in sys.modules)
assert left == [], f"still marked or imported after AG2's import: {left}"
import matplotlib, openai
print("imported", openai.__name__, matplotlib.__name__)
"""

BEFORE_AG2 = """
import sys
import openai
before = sys.modules["openai"]
import maps_autogen.orchestration._ag2
assert sys.modules["openai"] is before
print("kept")
"""


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_the_hidden_packages_import_as_usual_once_ag2_is_imported() -> None:
    assert _run(AFTER_AG2).strip() == "imported openai matplotlib"


def test_a_package_imported_before_ag2_is_left_alone() -> None:
    assert _run(BEFORE_AG2).strip() == "kept"
