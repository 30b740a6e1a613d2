"""Eval run folders written directly (a manifest.json and a results.jsonl, as `maps eval` writes
them), with known verdicts per problem, for the report's tests: write_eval_run; and the records of
such a folder built in the current schema (`eval_manifest`: the settings and the selection a
manifest records, built from its models, method, steps left out and team)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from maps_autogen.eval._verdict_settings import scoring_hash
from maps_autogen.records._schema import Manifest, ModelRecord, ModelSent, ResultRow, SelectionRecord, TeamRecord
from maps_autogen.records._verdict_settings import (
    ModelSettings,
    ReviewSettings,
    StepSettings,
    TeamSettings,
    VerdictSettings,
)

TEAM = TeamRecord(steps=["interpreter", "aligner", "scholar", "solver", "critic"], reviewer="critic",
                  final_step="solver", scored={"interpreter": "caption", "aligner": "alignment",
                                               "scholar": "knowledge", "solver": "solution"})


def model_record(model: str, *, endpoint: str | None = "openai", kind: str | None = "openai",
                 **fields: Any) -> ModelRecord:
    """A step's model as a manifest or run.json records it (the paper's prompt layout)."""
    return ModelRecord.model_validate({"model": model, "endpoint": endpoint, "kind": kind, "prompt_layout": "paper",
                                       **fields})


def selection_of(ids: Iterable[str | int]) -> SelectionRecord:
    """The selection of problems `ids` whose rows hold no gold answer and no scoring fields."""
    listed = [str(pid) for pid in ids]
    return SelectionRecord(ids=listed, scoring={pid: scoring_hash(None, {}) for pid in listed},
                           shown={pid: "0" * 12 for pid in listed})


def eval_manifest(benchmark: str, ids: Iterable[str | int], *, method: str = "maps", without: Iterable[str] = (),
                  models: Mapping[str, ModelRecord] | None = None, team: TeamRecord | None = None,
                  threshold: float | None = None, **fields: Any) -> Manifest:
    """The manifest of an eval of `benchmark` on problems `ids`, with the verdict settings its
    models, method, steps left out, team and review threshold make (what tells a report's rows
    apart), and `fields` set as given."""
    ids = list(ids)
    models = dict(models or {})
    settings = VerdictSettings(
        method=method, without=sorted(without),
        models={role: ModelSettings(kind=model.kind, model=model.model, temperature=model.temperature,
                                    max_tokens=model.max_tokens, json_mode=model.json_mode,
                                    base_url=model.replicas or model.base_url)
                for role, model in models.items()})
    if team is not None:
        settings = settings.model_copy(update={"team": TeamSettings(steps=[StepSettings(name=name) for name in team.steps])})
    if threshold is not None:
        settings = settings.model_copy(update={"review": ReviewSettings(threshold=threshold)})
    fields = {"benchmark": benchmark, "ids": ids, "method": method, "without": list(without), "models": models,
              "selection": selection_of(ids), "settings": settings, **({"team": team} if team is not None else {}),
              **fields}
    return Manifest.model_validate(fields)


def eval_manifest_json(benchmark: str, ids: Iterable[str | int], **fields: Any) -> dict[str, Any]:
    """`eval_manifest`'s JSON, as manifest.json holds it (for a test that writes the file itself)."""
    return eval_manifest(benchmark, ids, **fields).model_dump(mode="json", exclude_unset=True, by_alias=True)


def result_row(pid: str | int, **fields: Any) -> ResultRow:
    """A results row of problem `pid` (status ok unless `fields` say otherwise), no scoring fields."""
    return ResultRow.model_validate({"pid": pid, "status": "ok", "scoring": {}, **fields})


def write_eval_run(folder: Path, benchmark: str, outcomes: dict[str, tuple[str, bool | None]], *,
                   method: str = "maps", without: tuple[str, ...] = (), model: str = "gpt-4o") -> Path:
    """An eval folder of `benchmark` whose problems are `outcomes`: pid -> (subset, verdict), a
    verdict of None being a problem that failed without one. Every step is answered by `model`."""
    folder.mkdir(parents=True)
    roles = ["solver"] if method != "maps" else [step for step in TEAM.steps if step not in without]
    manifest = eval_manifest(benchmark, outcomes, method=method, without=without, team=TEAM,
                             subsets=sorted({subset for subset, _ in outcomes.values()}),
                             models={role: model_record(model) for role in roles})
    (folder / "manifest.json").write_text(manifest.model_dump_json(exclude_none=True))
    rows = [ResultRow(pid=pid, subset=subset, status="ok" if verdict is not None else "failed", method=method,
                      correct=verdict, stop_reason="critic_passed" if verdict is not None else "error",
                      models={role: ModelSent(model=model) for role in roles}, scoring={})
            for pid, (subset, verdict) in outcomes.items()]
    (folder / "results.jsonl").write_text("".join(row.model_dump_json(exclude_none=True) + "\n" for row in rows))
    return folder


def verdicts(folder: Path) -> dict[str, bool | None]:
    """pid -> verdict of a folder written by write_eval_run (what its results say)."""
    return {str(row["pid"]): row.get("correct") for row in map(json.loads, (folder / "results.jsonl").open())}
