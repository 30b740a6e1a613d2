"""Which eval runs share a row of the report (Table 1, usage, Figures 4, 5 and 6), and how a
row is labelled.

Runs share a row only when everything that can change a verdict is the same: the settings a
`--resume` must match (eval/_verdict_settings.py: the team with its personalities and prompts, the
review's threshold, rollbacks and round limit, every model setting sent, the method, the
steps left out), apart from what belongs to a benchmark (its problems and its answer-format
templates) and the endpoints' addresses (the same model served from another host or port is
the same model: the label names the model that answered). Two runs of one benchmark never
share a row, whatever their settings: they are never averaged into one cell. A resume that ran
under changed settings (`--allow-change`) is a row of its own ("mixed settings").

A row is labelled by its method and the models that answered: the served model (what the
service reported), with the requested one where they differ ("gpt-4o-mini; asked for gpt-4o"),
and "served by several models" when one step's calls were answered by more than one. Rows
that would share that label are told apart by what differs between them, named as `--resume`
names a difference ("review.threshold 3"), a changed team by its steps ("team interpreter,
aligner, expert, solver, critic"); when that is long, by a number ("settings #2"), the report's
row list giving the differences in full; the same settings again by the run's folder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from maps_autogen._util import valid_text
from maps_autogen.eval._verdict_settings import differences, mixed_settings, narrowed, recorded_json
from maps_autogen.records import VerdictSettings

if TYPE_CHECKING:
    from maps_autogen.eval._table1 import Run

MAX_SUFFIX_CHARS = 80  # a label's "what differs" part longer than this becomes "settings #n"
MAX_NAME_CHARS = 80  # a model name (the service's word for what answered) in a label, at most
_DIGEST_SHOWN = 15  # "sha256:" and the first 8 hex digits of a hashed setting (a prompt)


def _name(text: str) -> str:
    """A name from a run's records (a model the service reported) fit for a label and a table
    cell: valid text on one line, no "|", bounded."""
    name = " ".join(valid_text(text).split()).replace("|", "/")
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"


@dataclass(frozen=True)
class ServedModels:
    """The models a run asked for and the models that answered (from each problem's calls)."""

    asked: tuple[str, ...]
    served: tuple[str, ...]
    several: bool  # some step's calls were answered by more than one model

    @property
    def text(self) -> str:
        """"gpt-4o", "gpt-4o-mini; asked for gpt-4o", "served by several models: a, b; asked for a"."""
        served = ", ".join(self.served)
        if self.several:
            served = f"served by several models: {served}"
        if self.served == self.asked and not self.several:
            return served
        return f"{served}; asked for {', '.join(self.asked)}"


def served_models(run: Run) -> ServedModels:
    """What `run` asked for and what answered: per step, the model each problem's request named
    and the model the service reported (the request's, when it reported none or the same)."""
    asked: set[str] = set()
    served: dict[str, set[str]] = {}
    for record in run.records:
        for role, sent in record.models.items():  # the settings sent (problem_run.models_sent)
            name = sent.model or (run.manifest.models[role].model if role in run.manifest.models else None)
            if name is None:
                continue
            asked.add(_name(name))
            served.setdefault(role, set()).add(_name(sent.served_model or name))
    if not asked:  # no call recorded (every problem failed before one): what was configured
        configured = tuple(sorted({_name(model.model) for model in run.manifest.models.values()}))
        return ServedModels(configured, configured, False)
    return ServedModels(tuple(sorted(asked)), tuple(sorted(set().union(*served.values()))),
                        any(len(names) > 1 for names in served.values()))


#: What a row's settings leave out: the problems and answer formats (the benchmark's), and where
#: each step's requests went (the label names the model that answered).
_NOT_THE_ROWS = {"data": True, "prompts": {"answer_formats"}, "models": {"__all__": {"base_url"}}}


def row_settings(run: Run) -> VerdictSettings:
    """What decides a run's verdicts, apart from what belongs to its benchmark (the problems and
    their answer formats), as its manifest records them."""
    return narrowed(run.manifest.settings, _NOT_THE_ROWS)


def ablation_settings(run: Run) -> dict[str, Any]:
    """`row_settings` without the steps left out (and where their images went), as recorded:
    what an ablation shares with the full run it is compared with in Table 2."""
    return recorded_json(row_settings(run), exclude={"without": True, "images": {"to_next_step"}})


def base_label(run: Run) -> str:
    """The method (with the steps left out) and the models that answered."""
    method = f"maps w/o {'+'.join(run.without)}" if run.without else run.method
    # A resume with --allow-change: its accuracy mixes settings, so it never shares a row.
    mixed = ", mixed settings" if mixed_settings(run.records) else ""
    return f"{method} ({served_models(run).text}{mixed})"


@dataclass
class RowGroup:
    """One row of the report: its label, its runs (at most one per benchmark), and what sets it
    apart from the rows that share its method and models (`name value` each)."""

    label: str
    runs: list[Run] = field(default_factory=list)
    differs: list[str] = field(default_factory=list)


def _key(run: Run) -> str:
    """What runs of one row share: the verdict settings, and the models that answered (the label)."""
    return json.dumps([recorded_json(row_settings(run)), base_label(run)], sort_keys=True, default=str)


def _value(settings: VerdictSettings, name: str) -> Any:
    """The value of a setting named as `run_settings.differences` names it ("review.threshold",
    "team.steps[2].prompt", "team.steps (count)"; "models.*.KEY": the first role's, all alike),
    as recorded; None where it has none."""
    recorded = recorded_json(settings)
    if name.startswith("models.*."):
        models = _walked(recorded, "models")
        key = name.removeprefix("models.*.")
        return next((_walked(model, key) for model in models.values()), None) if isinstance(models, dict) else None
    return _walked(recorded, name)


def _walked(value: Any, name: str) -> Any:
    """The value at a dotted `name` ("team.steps[2].prompt") of a JSON value; None where there is none."""
    for part in name.removesuffix(" (count)").replace("[", ".[").split("."):
        if part.startswith("[") and isinstance(value, list):
            index = int(part[1:-1])
            value = value[index] if index < len(value) else None
        elif isinstance(value, dict):
            value = value[part] if part in value else None
        else:
            return None
    return value


def _shown(value: Any) -> str:
    """A setting's value in a label: short plain values as they are, hashes shortened, a list of
    steps by their names."""
    if isinstance(value, list) and all(isinstance(item, dict) and "name" in item for item in value):
        return _name(", ".join(str(item["name"]) for item in value))
    if isinstance(value, str):
        return value[:_DIGEST_SHOWN] if value.startswith("sha256:") else _name(value)
    return _name(json.dumps(value, ensure_ascii=False, default=str))


def _roles_together(names: list[str], family: list[VerdictSettings]) -> list[str]:
    """`models.ROLE.KEY` differences named once as `models.*.KEY` when, in every row, that
    setting has one value across those roles (a temperature set for the whole team)."""
    by_key: dict[str, list[str]] = {}
    for name in names:
        parts = name.split(".")
        if parts[0] == "models" and len(parts) == 3:
            by_key.setdefault(parts[2], []).append(name)
    together: dict[str, str] = {}
    for key, grouped in by_key.items():
        if len(grouped) > 1 and all(len({json.dumps(_value(settings, name), default=str) for name in grouped}) == 1
                                    for settings in family):
            together.update({name: f"models.*.{key}" for name in grouped})
    return list(dict.fromkeys(together.get(name, name) for name in names))


def _step_names(settings: VerdictSettings) -> list[str]:
    """The team's step names in order (as the settings record them)."""
    return [_name(step.name) for step in settings.team.steps] if settings.team is not None else []


def group_runs(runs: Sequence[Run]) -> list[RowGroup]:
    """The report's rows, in the order their first run was given; sets each run's `row_label`."""
    groups: list[RowGroup] = []
    keys: list[str] = []
    for run in runs:
        key = _key(run)
        home = next((group for group, known in zip(groups, keys, strict=True)
                     if known == key and all(other.benchmark != run.benchmark for other in group.runs)), None)
        if home is None:
            home = RowGroup(base_label(run))
            groups.append(home)
            keys.append(key)
        home.runs.append(run)
    families: dict[str, list[RowGroup]] = {}
    for group in groups:
        families.setdefault(group.label, []).append(group)
    for label, family in families.items():
        if len(family) > 1:
            _tell_apart(label, family)
    for group in groups:
        for run in group.runs:
            run.row_label = group.label
    return groups


def _tell_apart(label: str, family: list[RowGroup]) -> None:
    """Label rows that share a method and models by the settings in which they differ."""
    first = row_settings(family[0].runs[0])
    names = list(dict.fromkeys(d.name for group in family[1:] for d in differences(first, row_settings(group.runs[0]))))
    teams = [_step_names(row_settings(group.runs[0])) for group in family]
    renamed = any(team != teams[0] for team in teams)
    if renamed:  # other steps: every difference in the steps and their models follows from that, named once
        common = set.intersection(*(set(team) for team in teams))
        names = [name for name in names if not name.startswith("team.steps")
                 and not (name.startswith("models.") and name.split(".")[1] not in common)]
    names = _roles_together(names, [row_settings(group.runs[0]) for group in family])
    stem = label[:-1]  # "maps (gpt-4o" + "; what differs)"
    taken: set[str] = set()
    for number, (group, team) in enumerate(zip(family, teams, strict=True), start=1):
        settings = row_settings(group.runs[0])
        group.differs = ([f"team {', '.join(team)}"] if renamed else []) + [
            f"{name} {_shown(_value(settings, name))}" for name in names]
        suffix = "; ".join(group.differs)
        if not suffix or len(suffix) > MAX_SUFFIX_CHARS:
            suffix = f"settings #{number}" if names or renamed else f"run {group.runs[0].path.name}"
        candidate = f"{stem}; {suffix})"
        if candidate in taken:  # the same settings again on one benchmark: told apart by the run folder
            candidate = f"{stem}; {suffix}; run {group.runs[0].path.name})"
        taken.add(candidate)
        group.label = candidate


__all__ = ["MAX_NAME_CHARS", "MAX_SUFFIX_CHARS", "RowGroup", "ServedModels", "ablation_settings", "base_label",
           "group_runs", "row_settings", "served_models"]
