"""Shared by the `maps eval --batch` tests: one eval run live or by batch on the scripted server,
and what two runs of the same problems must share (verdicts, transcripts, tokens) with what
may differ (times, the batch a call came in, its price) left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.common import TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_cli import eval_dir_of
from tests.helpers.fake_openai import FakeOpenAI

# Fields that differ between two runs of the same problems: when, how long, what it cost, how it travelled.
TIMES = {"started_at", "at", "seconds", "created_at", "finished_at"}
PRICED = {"cost", "batch", "prompt_rate", "completion_rate", "cached_rate", "batch_calls"}


def batch_config(folder: Path, **changes: Any) -> Path:
    """agents.yaml with the batches looked at every 50 ms (the scripted service moves on each look)."""
    return write_config(folder / "agents.yaml", **{"endpoints.openai.batch_poll_s": 0.05, **changes})


def run_eval(folder: Path, server: FakeOpenAI, data: Path, *extra: str, batch: bool, benchmark: str = "mathvista",
             timeout: float = 300) -> tuple[Any, Path | None]:
    """`maps eval` on `data` into folder/runs (its own response cache); the result and the eval folder."""
    folder.mkdir(parents=True, exist_ok=True)
    config = batch_config(folder)
    # A wide console: the progress bar's line (accuracy, cost, the round) is read whole.
    env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY, COLUMNS="300")
    args = ["eval", benchmark, "--data", str(data), "--runs-dir", str(folder / "runs"), "--config", str(config),
            *extra, *(["--batch"] if batch else [])]
    result = run_maps(args, env=env, cwd=folder, timeout=timeout)
    runs = folder / "runs"
    found = [path for path in runs.iterdir() if path.name.startswith("eval-")] if runs.is_dir() else []
    return result, eval_dir_of(runs) if found else None


def _without(value: Any, drop: set[str]) -> Any:
    if isinstance(value, dict):
        return {key: _without(item, drop) for key, item in value.items() if key not in drop}
    if isinstance(value, list):
        return [_without(item, drop) for item in value]
    return value


def outcome(eval_dir: Path) -> dict[str, Any]:
    """Per problem: its results row and its transcript, without times, costs and batch fields."""
    rows = [json.loads(line) for line in (eval_dir / "results.jsonl").read_text().splitlines()]
    shown: dict[str, Any] = {}
    for row in rows:
        transcript = [json.loads(line) for line in (eval_dir / row["run_dir"] / "transcript.jsonl").read_text()
                      .splitlines()]
        shown[row["pid"]] = {"row": _without(row, TIMES | PRICED), "transcript": _without(transcript, TIMES | PRICED)}
    return shown


def calls(eval_dir: Path) -> list[dict[str, Any]]:
    """Every model call's usage, over the eval's transcripts."""
    found = []
    for path in sorted((eval_dir / "problems").glob("*/transcript.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("usage"):
                found.append(record["usage"])
    return found
