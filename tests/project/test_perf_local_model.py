"""perf/local_model.py runs (its short mode: two small calls to the embedded model) and prints
the prompt figure with the tokens llama.cpp took from its cache; the speeds are not asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import clean_env

pytestmark = [pytest.mark.local, pytest.mark.perf]

REPO = Path(__file__).resolve().parents[2]


def test_local_model_short_mode_prints_the_prompt_figures() -> None:
    result = subprocess.run([sys.executable, str(REPO / "perf" / "local_model.py"), "--short"],
                            env=clean_env(), cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    line = next((line for line in result.stdout.splitlines() if line.startswith("prompt of one solve")), "")
    found = re.search(r"(\d+) requests, (\d+) prompt tokens, (\d+) from the cache \(\d+%\), (\d+) read at", line)
    assert found, result.stdout
    requests, prompt, cached, read = (int(group) for group in found.groups())
    assert requests == 2 and prompt == cached + read
    # The second request begins as the first did (the embedded model's shared-prefix layout):
    # llama.cpp read it from its cache, about half the tokens of the two requests.
    assert cached >= 0.3 * prompt
