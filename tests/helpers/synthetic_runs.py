"""Eval run folders written directly (a manifest.json and a results.jsonl, as `maps eval` writes
them), with known verdicts per problem, for the report's tests: write_eval_run."""

from __future__ import annotations

import json
from pathlib import Path

from maps_autogen.records._schema import Manifest, ModelRecord, ModelSent, ResultRow, TeamRecord

TEAM = TeamRecord(steps=["interpreter", "aligner", "scholar", "solver", "critic"], reviewer="critic",
                  final_step="solver", scored={"interpreter": "caption", "aligner": "alignment",
                                               "scholar": "knowledge", "solver": "solution"})


def write_eval_run(folder: Path, benchmark: str, outcomes: dict[str, tuple[str, bool | None]], *,
                   method: str = "maps", without: tuple[str, ...] = (), model: str = "gpt-4o") -> Path:
    """An eval folder of `benchmark` whose problems are `outcomes`: pid -> (subset, verdict), a
    verdict of None being a problem that failed without one. Every step is answered by `model`."""
    folder.mkdir(parents=True)
    roles = ["solver"] if method != "maps" else [step for step in TEAM.steps if step not in without]
    manifest = Manifest(benchmark=benchmark, method=method, without=list(without), team=TEAM,
                        subsets=sorted({subset for subset, _ in outcomes.values()}), ids=list(outcomes),
                        models={role: ModelRecord(model=model, endpoint="openai", kind="openai") for role in roles})
    (folder / "manifest.json").write_text(manifest.model_dump_json(exclude_none=True))
    rows = [ResultRow(pid=pid, subset=subset, status="ok" if verdict is not None else "failed", method=method,
                      correct=verdict, stop_reason="critic_passed" if verdict is not None else "error",
                      models={role: ModelSent(model=model) for role in roles})
            for pid, (subset, verdict) in outcomes.items()]
    (folder / "results.jsonl").write_text("".join(row.model_dump_json(exclude_none=True) + "\n" for row in rows))
    return folder


def verdicts(folder: Path) -> dict[str, bool | None]:
    """pid -> verdict of a folder written by write_eval_run (what its results say)."""
    return {str(row["pid"]): row.get("correct") for row in map(json.loads, (folder / "results.jsonl").open())}
