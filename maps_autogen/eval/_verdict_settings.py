"""What decides an eval run's verdicts, recorded in its manifest and compared on `--resume`.

`verdict_settings` computes, from the assembled team and the selected problems, the typed
settings (`settings_record.VerdictSettings`) with named parts: `team` (the steps in order:
name, inputs, personality, output, images, reviewer scale, and each step's prompt content
hashed), `prompts` (the task, manager,
UserProxy, answer-format and baseline prompts, hashed), `review` (threshold, rollbacks, final
review, round limit, tie rule), `models` (per role: endpoint URL(s), kind, JSON mode and every setting a
request carries), `images` (the side images are reduced to), `method`, `without` and `data`
(how many problems, and a fingerprint of their ids and gold answers).

`differences` compares two of them part by part, by their JSON as recorded (a setting at its
default is not recorded: one recorded on neither side is no difference, one recorded on one side
only is), and names each difference the way a
user finds it (`review.threshold 5.0 → 3.0`, `team.steps[2].prompt`, `models.solver.base_url`,
`data (gold answers or scoring fields of 3 ids)`); `resume_under` refuses them, or records them as a change of
the manifest. `mixed_settings` says whether a run's scored problems ran under more than one
recorded set of settings (each results row carries the index it ran under).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maps_autogen._util import UsageError
from maps_autogen.records import (
    DataFingerprint,
    ImageSettings,
    LimitSettings,
    LocalSettings,
    Manifest,
    ModelSettings,
    PromptSettings,
    ReviewSettings,
    SettingsChange,
    StepSettings,
    TeamSettings,
    VerdictSettings,
)
from maps_autogen.settings import (
    FIELD_NOT_COMPARED,
    LimitsConfig,
    endpoint_compared,
    sections_compared,
    unrecorded_fields,
)

if TYPE_CHECKING:  # annotations only: `maps report` reads rows without loading the engine
    from maps_autogen.orchestration import Team
    from maps_autogen.problem import EvalItem
    from maps_autogen.records import ResultRow

_DIGEST = "sha256:"
_SHOWN = 3  # differences named in a refusal before "and N more"
_ORDER = ("method", "without", "options", "models", "review", "data", "team", "prompts", "images", "limits",
          "config")  # listing order
_DEFAULT_REPLY_BYTES = LimitsConfig().reply_bytes


def digest(value: Any) -> str:
    """A stable content hash of a JSON-like value (prompt text, templates)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return _DIGEST + hashlib.sha256(text.encode()).hexdigest()


def _content(prompt: Any) -> str:
    """The hash of a loaded prompt's text (where it was read from is not part of it)."""
    fields = {key: value for key, value in dataclasses.asdict(prompt).items() if key != "source"}
    return digest(fields)


def data_fingerprint(items: Iterable[EvalItem]) -> DataFingerprint:
    """The selected problems: their count, one hash of ids and what their scoring reads
    (order-free) and a short hash per id (so a difference can say how many ids changed). What
    scoring reads is the gold answer and every field of the row the scorer takes (`item.record`:
    a tolerance, a precision, the options, the answer type...): any of them can change a verdict.
    Beside it, per id, a short hash of what the steps are shown (`shown_hash`): an edited
    question or context, another option, a replaced image file."""
    listed = list(items)
    return fingerprint_of({str(item.pid): _scoring_hash(item) for item in listed},
                          {str(item.pid): shown_hash(item) for item in listed})


def _scoring_hash(item: EvalItem) -> str:
    return scoring_hash(item.gold, item.record)


def scoring_hash(gold: Any, record: Any) -> str:
    """A short hash of a problem's gold answer and scoring fields (a results row's `gold` and
    `scoring` give the same as its data set row)."""
    scored = json.dumps({"gold": gold, "record": record}, sort_keys=True, default=str)
    return hashlib.sha256(scored.encode()).hexdigest()[:12]


def shown_hash(item: EvalItem) -> str:
    """A short hash of what the steps are shown of a problem: its texts as given
    (`EvalItem.shown`) and each image's bytes (`EvalItem.image_refs`: a file read from its
    folder, a row's own bytes); an http(s) image by its URL (fetched when its problem starts)."""
    digest = hashlib.sha256(json.dumps(item.shown, sort_keys=True, default=str).encode())
    for reference in item.image_refs:
        digest.update(b"\0" + _image_bytes_hash(reference, item.base_dir).encode())
    return digest.hexdigest()[:12]


def _image_bytes_hash(reference: Any, base_dir: Path | None) -> str:
    """An image reference as the fingerprint holds it: a hash of its bytes where we have them."""
    if isinstance(reference, dict):
        reference = reference.get("bytes") or reference.get("path")
    if isinstance(reference, (bytes, bytearray)):
        return hashlib.sha256(reference).hexdigest()
    if isinstance(reference, str) and not reference.startswith(("http://", "https://", "data:")):
        candidate = Path(reference).expanduser()  # the path was checked to stay in its folder (problem/_rows.py)
        try:
            with open(candidate if candidate.is_absolute() or base_dir is None else base_dir / candidate, "rb") as file:
                return hashlib.file_digest(file, "sha256").hexdigest()
        except OSError:
            return f"missing {reference}"  # its problem fails when it starts, saying why
    if hasattr(reference, "tobytes"):  # a decoded picture
        return hashlib.sha256(reference.tobytes()).hexdigest()
    return json.dumps(reference, default=str)  # a URL (or data URL): the text is what is known


def fingerprint_of(gold: Mapping[str, str], shown: Mapping[str, str]) -> DataFingerprint:
    """The data fingerprint of per-id gold hashes and per-id hashes of what the steps are shown:
    built from them alone, so the shards of one evaluation combine into the fingerprint of the
    whole (`maps merge`)."""
    return DataFingerprint(count=len(gold), sha256=digest(sorted(gold.items())), gold=dict(gold), shown=dict(shown))


def verdict_settings(team: Team, *, method: str, without: Collection[str], items: Sequence[EvalItem],
                     answer_formats: Mapping[str, str], baseline_prompt: Any | None,
                     options: Mapping[str, Any] | None = None) -> VerdictSettings:
    """Everything of this run that can change a verdict (see the module doc). `answer_formats`
    are this benchmark's templates; `baseline_prompt` the method's prompt for a single-call
    baseline (None for maps); `options` the command's options compared as given
    (eval/_options.py's compared_options). Every field of the settings models is compared, as
    settings/_compared.py derives it: what the parts below name, and every other field not at its
    default as written."""
    config = team.loaded.config
    team_config = team.loaded.team.config
    prompts = team.prompts
    # A step's model is under `models`; the threshold in force is under `review`.
    steps = [StepSettings(**step.model_dump(mode="json", exclude={"prompt", "model", "threshold"}),
                          prompt=_content(prompts.roles[step.name]))
             for step in team_config.steps]
    models = {}
    for role, model in team.resolution.models.items():
        sent = team.backends[role].settings()
        models[role] = ModelSettings(
            kind=model.kind,
            # as the manifest's models record it (userinfo masked)
            base_url=model.shown_replicas if len(model.base_urls) > 1 else model.shown_base_url,
            json_mode=model.json_mode,
            temperature=sent.temperature,
            max_tokens=sent.max_tokens,
            # every other setting a request carries (streaming is transport)
            **sent.model_dump(mode="json", exclude_unset=True, exclude={"stream", "temperature", "max_tokens"}),
            # A text-only model gets a note in place of each image (None: images are sent, the default).
            vision=None if model.vision else False,
            prompt_layout=model.prompt_layout,
            # the endpoint's other settings (max_images, max_retries...), as written when not at their default
            endpoint=_endpoint_settings(team, model.endpoint_name),
        )
        if model.local is not None:
            local = model.local
            models[role] = models[role].model_copy(update={"local": LocalSettings(
                model_path=local.model_path, mmproj_path=local.mmproj_path, n_ctx=local.n_ctx,
                chat_template=local.chat_template)})
    threshold = config.critic.threshold if config.critic.threshold is not None else team_config.threshold
    leaves_out_seeing = any(step.sees_images and (step.name in without or not step.enabled)
                            for step in team_config.steps)
    return VerdictSettings(
        team=TeamSettings(steps=steps, manager_personality=team_config.manager_personality,
                          user_proxy_personality=team_config.user_proxy_personality,
                          **unrecorded_fields(team_config, _TEAM_RECORDED)),
        prompts=PromptSettings(
            task=_content(prompts.task),
            manager=_content(prompts.manager),
            user_proxy=_content(prompts.user_proxy),
            answer_formats=digest(dict(answer_formats)),
            baseline=_content(baseline_prompt) if baseline_prompt is not None else None,
        ),
        review=ReviewSettings(
            threshold=threshold,
            max_rollbacks=config.critic.max_rollbacks,
            final_review=config.critic.final_review,
            max_rounds=config.stop.max_rounds,
            # None for the default rule
            ties=None if config.critic.ties == "worst_step" else config.critic.ties,
            **unrecorded_fields(config.critic, _CRITIC_RECORDED),
            **unrecorded_fields(config.stop, _STOP_RECORDED),
        ),
        models=models,
        # Where a left-out step's images go matters only when a step that sees them is left out
        # (None otherwise).
        images=ImageSettings(max_side=config.images.max_side,
                             to_next_step=config.images.to_next_step if method == "maps" and leaves_out_seeing
                             else None,
                             **unrecorded_fields(config.images, _IMAGES_RECORDED)),
        # A reply longer than this is cut before it is read (None: the default).
        limits=LimitSettings(reply_bytes=None if config.limits.reply_bytes == _DEFAULT_REPLY_BYTES
                             else config.limits.reply_bytes,
                             **unrecorded_fields(config.limits, _LIMITS_RECORDED, FIELD_NOT_COMPARED["limits"])),
        method=method,
        without=sorted(without),
        data=data_fingerprint(items),
        config=sections_compared(config) or None,
        options=dict(options) if options else None,
    )


# What each part above records by name (every other field of its section: `unrecorded_fields`).
_TEAM_RECORDED = ("steps", "manager_personality", "user_proxy_personality")
_CRITIC_RECORDED = ("threshold", "max_rollbacks", "final_review", "ties")
_STOP_RECORDED = ("max_rounds",)
_IMAGES_RECORDED = ("max_side", "to_next_step")
_LIMITS_RECORDED = ("reply_bytes",)


def _endpoint_settings(team: Team, name: str) -> dict[str, Any] | None:
    """The settings of the endpoint `name` compared as written (settings/_compared.py), or None."""
    endpoint = team.loaded.config.endpoints.get(name)
    return (endpoint_compared(endpoint) or None) if endpoint is not None else None


@dataclass(frozen=True)
class Difference:
    """One setting that differs: its name, and the value recorded and the value now."""

    name: str
    before: Any
    after: Any

    def describe(self) -> str:
        """The name, with both values when they are short plain values (never hashes)."""
        if _plain(self.before) and _plain(self.after):
            return f"{self.name} {_show(self.before)} → {_show(self.after)}"
        return self.name


def _plain(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= 80 and value.isprintable() and not value.startswith(_DIGEST)  # one line, no hashes
    if isinstance(value, list):
        return len(value) <= 4 and all(isinstance(v, str) and _plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float))


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


_MISSING = object()


def _at(mapping: Mapping[str, Any], key: str) -> Any:
    """The value under `key` in a settings part as recorded, or _MISSING when not recorded."""
    return mapping[key] if key in mapping else _MISSING


def _walk(name: str, before: Any, after: Any, found: list[Difference]) -> None:
    if before is _MISSING and after is None:
        return  # not recorded, and unset now
    if isinstance(before, dict) and after is None or before is None and isinstance(after, dict):
        # settings recorded as written, all at their default on one side: each is named
        before, after = before or {}, after or {}
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(key for key in after if key not in before)]:
            _walk(f"{name}.{key}", _at(before, key), _at(after, key), found)
        return
    dicts = isinstance(before, list) and isinstance(after, list) and all(isinstance(v, dict) for v in (*before, *after))
    if dicts and len(before) == len(after):
        for index, (old, new) in enumerate(zip(before, after)):
            _walk(f"{name}[{index}]", old, new, found)
        return
    if dicts:
        found.append(Difference(f"{name} (count)", len(before), len(after)))
        return
    if before != after:
        found.append(Difference(name, None if before is _MISSING else before, None if after is _MISSING else after))


def _data_differences(before: DataFingerprint, after: DataFingerprint) -> list[Difference]:
    old, new = before.gold, after.gold
    changed = sorted(pid for pid in old.keys() & new.keys() if old[pid] != new[pid])
    gone, added = sorted(old.keys() - new.keys()), sorted(new.keys() - old.keys())
    found = []
    if changed:
        ids = f"{len(changed)} id{'s' if len(changed) != 1 else ''}"
        found.append(Difference(f"data (gold answers or scoring fields of {ids})",
                                {pid: old[pid] for pid in changed}, {pid: new[pid] for pid in changed}))
    old_shown, new_shown = before.shown, after.shown  # what the steps are shown
    edited = sorted(pid for pid in old_shown.keys() & new_shown.keys() if old_shown[pid] != new_shown[pid])
    if edited:
        ids = f"{len(edited)} id{'s' if len(edited) != 1 else ''}"
        found.append(Difference(f"data (questions, contexts, options or images of {ids}, e.g. {edited[0]})",
                                {pid: old_shown[pid] for pid in edited}, {pid: new_shown[pid] for pid in edited}))
    if gone or added:
        found.append(Difference(f"data (ids: {len(gone)} gone, {len(added)} new)", gone, added))
    if not found and before.sha256 != after.sha256:
        found.append(Difference("data.sha256", before.sha256, after.sha256))
    return found


def recorded_json(settings: VerdictSettings, *, exclude: Any = None) -> dict[str, Any]:
    """The settings' JSON as a manifest records them: the parts and settings that were set,
    less `exclude` (pydantic's form)."""
    return settings.model_dump(mode="json", exclude_unset=True, exclude=exclude)


def narrowed(settings: VerdictSettings, exclude: Any) -> VerdictSettings:
    """The settings less what `exclude` names (pydantic's form), as if it had never been recorded."""
    return VerdictSettings.model_validate(recorded_json(settings, exclude=exclude))


def differences(before: VerdictSettings, after: VerdictSettings) -> list[Difference]:
    """What differs between two `verdict_settings`, part by part in the order they are built."""
    found: list[Difference] = []
    old, new = recorded_json(before, exclude={"data"}), recorded_json(after, exclude={"data"})
    parts = [*new, *(["data"] if after.data is not None else [])]
    for part in sorted(parts, key=lambda name: _ORDER.index(name) if name in _ORDER else len(_ORDER)):
        if part == "data" and after.data is not None:
            if before.data is not None:
                found += _data_differences(before.data, after.data)
            else:
                found.append(Difference("data (not recorded)", None, after.data.sha256))
            continue
        # A part one side does not record (all its settings at their default there): each
        # setting the other side sets is a difference, one left unset is not.
        _walk(part, old[part] if part in old else {} if isinstance(new[part], dict) else _MISSING, new[part], found)
    return found


def _role_setting(difference: Difference) -> tuple[str, str, str] | None:
    """(setting, from, to) of a difference in one role's model setting (models.ROLE.KEY, or a
    setting inside one: models.ROLE.endpoint.KEY)."""
    parts = difference.name.split(".")
    if parts[0] != "models" or len(parts) < 3:
        return None
    return ".".join(parts[2:]), json.dumps(difference.before, default=str), json.dumps(difference.after, default=str)


def _grouped(found: Sequence[Difference]) -> list[str]:
    """Each difference described once; the same change of several roles' model setting is one
    `models.*.KEY FROM → TO (N roles)`."""
    groups: dict[tuple[str, str, str], list[Difference]] = {}
    for difference in found:
        if (key := _role_setting(difference)) is not None:
            groups.setdefault(key, []).append(difference)
    described = []
    for difference in found:
        key = _role_setting(difference)
        group = groups[key] if key is not None else [difference]
        if len(group) == 1:
            described.append(difference.describe())
        elif group[0] is difference and key is not None:
            shared = Difference(f"models.*.{key[0]}", difference.before, difference.after)
            described.append(f"{shared.describe()} ({len(group)} roles)")
    return described


def summary_line(found: Sequence[Difference]) -> str:
    """The first few differences, then how many more."""
    described = _grouped(found)
    more = len(described) - _SHOWN
    return ", ".join(described[:_SHOWN]) + (f", and {more} more" if more > 0 else "")


def change_entry(found: Sequence[Difference], *, at: str, index: int) -> SettingsChange:
    """A manifest `changes` entry: when, which settings index the problems run after it carry,
    and only the differing values, from and to, by name."""
    return SettingsChange(at=at, settings=index, differences=[d.name for d in found],
                          from_={d.name: d.before for d in found}, to={d.name: d.after for d in found}, pids=[])


def resume_under(manifest: Manifest, settings: VerdictSettings, described: Mapping[str, Any], *, run: str,
                 allow_change: bool, now: str) -> Manifest:
    """Check a resume's `settings` against those `manifest` recorded: any difference is refused
    with one line naming it unless `allow_change`; then the manifest (returned) gets a `changes`
    entry and `described` (fields of the manifest: its method, models, team, config) becomes the
    settings in force."""
    found = differences(manifest.settings, settings)
    if found and not allow_change:
        raise UsageError(f"{run} was run with other settings: {summary_line(found)}",
                         fix="resume with the run's config, team, prompts, models and data, or pass --allow-change "
                             "to switch (the manifest records each change and which problems ran under it)")
    updated = manifest
    if found:
        change = change_entry(found, at=now, index=len(manifest.changes) + 1)
        updated = updated.model_copy(update={"changes": [*manifest.changes, change], **described})
    return updated.model_copy(update={"settings": settings})


def record_pids(changes: Sequence[SettingsChange], rows: Sequence[ResultRow]) -> list[SettingsChange]:
    """Each `changes` entry with the pids whose latest row ran under the settings it introduced
    (a pid in no entry ran under the run's first settings)."""
    return [change.model_copy(update={"pids": [str(row.pid) for row in rows if row.settings == change.settings]})
            for change in changes]


def mixed_settings(rows: Iterable[ResultRow]) -> bool:
    """Whether the scored rows ran under more than one recorded set of settings (each row's
    `settings` index: 0 for the run's first)."""
    return len({row.settings for row in rows if row.status == "ok"}) > 1


__all__ = ["Difference", "change_entry", "data_fingerprint", "differences", "digest", "mixed_settings", "narrowed",
           "record_pids", "recorded_json", "resume_under", "scoring_hash", "shown_hash", "summary_line",
           "verdict_settings"]
