"""A resume compares every setting that changes what is sent, derived from one list: every field
of an endpoint, of agents.yaml's sections and of `maps eval`'s options is compared (as sent, as a
part of the verdict settings, or as written) unless a list leaves it out with its reason
(settings/_compared.py, eval/_options.py). A change of each compared field, one at a time, is a
difference; a setting added to a model is compared by itself (the test below makes its changed
value from the field's type); and an endpoint's limit on what a request carries (max_images)
changed before a resume is refused by the real command, naming it."""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from maps_autogen.eval._options import FIXED_ON_RESUME, NOT_COMPARED_OPTIONS, EvalOptions, compared_options
from maps_autogen.eval._verdict_settings import (
    _CRITIC_RECORDED,
    _IMAGES_RECORDED,
    _LIMITS_RECORDED,
    _STOP_RECORDED,
    _TEAM_RECORDED,
    differences,
    verdict_settings,
)
from maps_autogen.orchestration._solving import assemble_team
from maps_autogen.records import ReviewSettings, VerdictSettings
from maps_autogen.settings import SettingsOptions, option
from maps_autogen.settings._compared import (
    ENDPOINT_NOT_COMPARED,
    ENDPOINT_RECORDED_AS,
    FIELD_NOT_COMPARED,
    SECTION_NOT_COMPARED,
    SECTION_PARTS,
    endpoint_compared,
    sections_compared,
    unrecorded_fields,
)
from maps_autogen.settings._config import (
    AppConfig,
    CriticConfig,
    ImagesConfig,
    LimitsConfig,
    LocalEndpoint,
    OpenAIEndpoint,
    StopConfig,
    load_config,
)
from maps_autogen.settings._team import TeamConfig
from tests.helpers.common import TEST_KEY, clean_env, run_maps, write_config
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI

ENDPOINTS = {"openai": OpenAIEndpoint, "local": LocalEndpoint}
# What a field's change needs beside it to be valid (an Azure endpoint needs its API version),
# and the changed value where a value made from the field's type would change nothing (a local
# endpoint without a projector sees no images, whether vision is unset or false).
COMPANIONS: dict[str, dict[str, Any]] = {"api_type": {"api_version": "2024-10-21"}, "vision": {"mmproj_path": "p.gguf"}}
CHANGES: dict[tuple[str, str], Any] = {("local", "vision"): False}
ENV = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": TEST_KEY}


def test_every_list_names_fields_that_exist() -> None:
    endpoint_fields = set(OpenAIEndpoint.model_fields) | set(LocalEndpoint.model_fields)
    assert set(ENDPOINT_RECORDED_AS) | set(ENDPOINT_NOT_COMPARED) <= endpoint_fields
    assert not set(ENDPOINT_RECORDED_AS) & set(ENDPOINT_NOT_COMPARED)
    assert set(SECTION_PARTS) | set(SECTION_NOT_COMPARED) <= set(AppConfig.model_fields)
    assert not set(SECTION_PARTS) & set(SECTION_NOT_COMPARED)
    for section, fields in FIELD_NOT_COMPARED.items():
        assert set(fields) <= set(AppConfig.model_fields[section].annotation.model_fields)  # type: ignore[union-attr]
    for recorded, model in ((_CRITIC_RECORDED, CriticConfig), (_STOP_RECORDED, StopConfig),
                            (_IMAGES_RECORDED, ImagesConfig), (_LIMITS_RECORDED, LimitsConfig),
                            (_TEAM_RECORDED, TeamConfig)):
        assert set(recorded) <= set(model.model_fields), recorded
    options = {one.name for one in EvalOptions.declared()}
    assert set(NOT_COMPARED_OPTIONS) <= options and not set(NOT_COMPARED_OPTIONS) & set(FIXED_ON_RESUME)


def _candidates(model: type[BaseModel], name: str, current: Any) -> list[Any]:
    """Values to try for a changed `name`: its Literal's other choices, the flag's other value,
    a number further, then values of every kind (the first the model takes is used)."""
    found: list[Any] = []
    stack = [model.model_fields[name].annotation]
    while stack:
        annotation = stack.pop()
        if typing.get_origin(annotation) is typing.Literal:
            found += [choice for choice in typing.get_args(annotation) if choice != current]
        stack += [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if isinstance(current, bool):
        found.append(not current)
    elif isinstance(current, (int, float)):
        found += [current + 1, current * 2]
    return found + [1, 0.5, 2, 17, "http://changed.example:8080/v1", "changed", {"X-Changed": "1"}, ["changed"],
                    True, False]


def changed(kind: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An endpoint of `kind` as written (its companions), and the same with `name` changed to
    the first candidate value the model takes (one made from the field's type: a field added
    later gets one too)."""
    model = ENDPOINTS[kind]
    base = {"kind": kind, **{key: value for key, value in COMPANIONS.get(name, {}).items() if key in model.model_fields}}
    current = getattr(model.model_validate(base), name)
    if (kind, name) in CHANGES:
        return base, {**base, name: CHANGES[kind, name]}
    for value in _candidates(model, name, current):
        try:
            made = model.model_validate({**base, name: value})
        except ValidationError:
            continue
        if getattr(made, name) != current:
            return base, {**base, name: value}
    raise AssertionError(f"no changed value of endpoints.{kind}.{name} validates: add one to COMPANIONS")


class _NoServer:
    """Stands in for the embedded model's server: what a request would carry is read without it."""

    base_url = "http://127.0.0.1:9/v1"
    api_key = "local-test-key-0000"

    def ensure_alive(self) -> None:
        return None


@pytest.fixture(autouse=True)
def no_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("maps_autogen.model.local._server.shared_local_server", lambda settings=None: _NoServer())


def settings_of(tmp_path: Path, endpoint: dict[str, Any], name: str) -> Any:
    config = write_config(tmp_path / f"{name}.yaml", **{"endpoints.probe": endpoint, "model.endpoint": "probe"})
    team = assemble_team(load_config(config), env=ENV)
    return verdict_settings(team, method="maps", without=(), items=[], answer_formats={}, baseline_prompt=None)


@pytest.mark.parametrize(("kind", "name"), [(kind, name) for kind, model in ENDPOINTS.items()
                                            for name in model.model_fields
                                            if name not in ENDPOINT_NOT_COMPARED and name != "kind"])
def test_a_change_of_every_compared_endpoint_setting_is_a_difference(tmp_path: Path, kind: str, name: str) -> None:
    before, after = changed(kind, name)
    found = differences(settings_of(tmp_path, before, "before"), settings_of(tmp_path, after, "after"))
    assert found, f"endpoints.{kind}.{name}: {before} → {after} is not seen by a resume"


@pytest.mark.parametrize("name", sorted(ENDPOINT_NOT_COMPARED))
def test_a_setting_left_out_changes_nothing_recorded(tmp_path: Path, name: str) -> None:
    """What the list leaves out really changes nothing a resume would see (so it is transport)."""
    kind = "openai" if name in OpenAIEndpoint.model_fields else "local"
    before, after = changed(kind, name)
    assert differences(settings_of(tmp_path, before, "before"), settings_of(tmp_path, after, "after")) == []


def test_a_team_setting_no_part_names_is_compared_as_written(tmp_path: Path) -> None:
    """The team's `inputs` rule (which inputs each step reads) was compared by no part: a field
    of a section no list names is compared as written, with no code naming it."""
    before, after = (verdict_settings(assemble_team(load_config(write_config(tmp_path / f"{rule}.yaml", **{
        "team.inputs": rule})), env=ENV), method="maps", without=(), items=[], answer_formats={}, baseline_prompt=None)
        for rule in ("declared", "equations"))
    assert "team.inputs null → equations" in [d.describe() for d in differences(before, after)]


def test_a_setting_added_later_joins_the_comparison_by_itself() -> None:
    """What another change adds (an endpoint's wait, a review switch, a top-level section, an
    option of maps eval) is compared when not at its default, with no list naming it."""

    class LaterEndpoint(OpenAIEndpoint):
        wait_s: float = 1.0

    class LaterCritic(CriticConfig):
        socratic: bool = False

    class LaterConfig(AppConfig):
        tracking: dict[str, Any] = {}

    @dataclass(frozen=True, kw_only=True)
    class LaterOptions(EvalOptions):
        service_tier: str | None = option(None, "--service-tier", "The service tier requested.", kind="text")

    assert endpoint_compared(LaterEndpoint(wait_s=2.5, max_images=1)) == {"wait_s": 2.5, "max_images": 1}
    assert endpoint_compared(LaterEndpoint()) == {}
    assert unrecorded_fields(LaterCritic(socratic=True), _CRITIC_RECORDED) == {"socratic": True}
    assert sections_compared(LaterConfig(team="maps", tracking={"wandb": "p"})) == {"tracking": {"wandb": "p"}}
    assert compared_options(LaterOptions(benchmark="mathvista", service_tier="flex", concurrency=3)) == {
        "service_tier": "flex"}
    before = VerdictSettings(review=ReviewSettings(max_rollbacks=3), options={"service_tier": "flex"})
    after = VerdictSettings(review=ReviewSettings(max_rollbacks=3, **unrecorded_fields(LaterCritic(socratic=True),
                                                                                         _CRITIC_RECORDED)), options=None)
    assert [d.describe() for d in differences(before, after)] == ["options.service_tier flex → null",
                                                                  "review.socratic null → true"]


def test_every_option_of_maps_eval_is_compared_or_left_out_with_a_reason() -> None:
    """Every option is compared (as the config it sets, as a part, as given) or fixed by the
    manifest, or left out with its reason; each one compared as given is recorded once set (an
    option another change adds is, by itself), and none left out is."""
    settings = {one.name for one in SettingsOptions.declared()}
    given = {"whole": 7, "number": 1.5, "flag": True, "text": "x", "names": ("x",), "path": "x"}
    for one in EvalOptions.declared():
        if one.name in FIXED_ON_RESUME or one.name in settings or one.spec.argument:
            continue
        value = [c for c in one.spec.choices if c != one.default][0] if one.spec.kind == "choice" else \
            given[one.spec.kind]
        recorded = compared_options(EvalOptions(benchmark="mathvista", **{one.name: value}))
        assert (one.name in recorded) is (one.name not in NOT_COMPARED_OPTIONS), one.name


def test_a_changed_image_cap_before_a_resume_is_refused_naming_it(tmp_path: Path) -> None:
    """The issue's case: an endpoint's limit on what a request carries, changed between the first
    run and its resume, is refused (and recorded as a change with --allow-change)."""
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 2)
    answers = {pid: "B" if row["question_type"] == "multi_choice" else row["answer"] for pid, row in rows.items()}
    capped = write_config(tmp_path / "one.yaml", **{"endpoints.openai.max_images": 1})
    wider = write_config(tmp_path / "two.yaml", **{"endpoints.openai.max_images": 2})
    with FakeOpenAI(ProblemScript(answers)) as server:
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=TEST_KEY)
        first = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"), "--limit", "1",
                          "--config", str(capped), "--quiet"], env=env, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        run = next((tmp_path / "runs").glob("eval-*"))
        calls = len(server.received)
        resumed = run_maps(["eval", "mathvista", "--data", str(data), "--resume", str(run), "--config", str(wider)],
                           env=env, cwd=tmp_path)
        assert resumed.returncode == 2, resumed.stderr
        [line] = resumed.stderr.strip().splitlines()
        assert "was run with other settings: models.*.endpoint.max_images 1 → 2" in line, line
        assert len(server.received) == calls
        allowed = run_maps(["eval", "mathvista", "--data", str(data), "--resume", str(run), "--config", str(wider),
                            "--allow-change", "--quiet"], env=env, cwd=tmp_path)
        assert allowed.returncode == 0, allowed.stderr
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["changes"][-1]["to"]["models.solver.endpoint.max_images"] == 2
