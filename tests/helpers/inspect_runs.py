"""`inspect eval maps_autogen/<task>` run as a user runs it, against the scripted server (Inspect's
openai-api provider reads FAKE_BASE_URL and FAKE_API_KEY), its one JSON log read back with Inspect's
own reader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers.common import TEST_KEY, clean_env
from tests.helpers.fake_openai import FakeOpenAI

INSPECT = Path(sys.executable).parent / "inspect"
MODEL = "openai-api/fake/fake-model"


def inspect_log(task: str, args: list[str], server: FakeOpenAI, folder: Path) -> Any:
    """The log of `inspect eval maps_autogen/<task> ARGS` against `server`, read by inspect_ai's read_eval_log."""
    from inspect_ai.log import read_eval_log

    logs = folder / "inspect-logs"
    env = {key: value for key, value in clean_env(FAKE_BASE_URL=server.base_url, FAKE_API_KEY=TEST_KEY).items()
           if not key.startswith("INSPECT_")}
    done = subprocess.run([str(INSPECT), "eval", f"maps_autogen/{task}", *args, "--model", MODEL, "--log-dir", str(logs),
                           "--log-format", "json", "--display", "none"],
                          env=env, cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (log_file,) = logs.glob("*.json")
    return read_eval_log(str(log_file), resolve_attachments=True)
