"""agents.yaml: defaults, validation that names key and file, overrides, personalities, and
the built-in defaults shipping inside the wheel as package data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from maps_autogen._util._errors import ConfigError
from maps_autogen.settings._config import defaults_dir, load_config
from maps_autogen.settings._endpoints import resolve_models
from maps_autogen.settings._overrides import with_overrides
from maps_autogen.settings._prompts import load_prompts, render
from tests.helpers.common import REPO, write_config


def test_builtin_defaults_load_and_match_the_documented_values(tmp_path: Path) -> None:
    loaded = load_config(cwd=tmp_path)
    assert loaded.path == (REPO / "maps_autogen" / "settings" / "defaults" / "agents.yaml").resolve()
    config = loaded.config
    team = loaded.team.config
    assert config.critic.threshold is None and team.threshold == 5 and (team.scale.low, team.scale.high) == (1, 5)
    assert config.critic.max_rollbacks == 3 and config.critic.final_review is True and config.stop.max_rounds is None
    assert team.names == ("interpreter", "aligner", "scholar", "solver", "critic")
    assert [step.name for step in team.steps if step.sees_images] == ["interpreter"] and config.images.max_side == 1568
    assert team.final_step.name == "solver" and team.reviewer.reviews == ("interpreter", "aligner", "scholar", "solver")
    prompts = load_prompts(loaded)
    for step in team.steps:
        assert prompts.system_message(step.name).startswith(f"You are the {step.title}")


def test_working_folder_config_wins_over_builtin(tmp_path: Path) -> None:
    path = write_config(tmp_path / "agents.yaml", **{"critic.threshold": 3})
    loaded = load_config(cwd=tmp_path)
    assert loaded.path == path.resolve() and loaded.config.critic.threshold == 3
    # Prompt files not beside the config come from the built-in prompts/.
    assert load_prompts(loaded).roles["solver"].source.startswith(str(defaults_dir()))


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"critic.max_rolbacks": 2}, "unknown key 'critic.max_rolbacks'"),
        ({"team.steps.3.sees_image": True}, "unknown key 'team.steps[3].sees_image'"),
        ({"roles": {}}, "unknown key 'roles'"),
        ({"endpoints.openai.api_key": "sk-oops"}, "unknown key 'endpoints.openai.api_key'"),
        ({"critic.threshold": 9}, "critic.threshold 9 is above the reviewer's score scale (1-5)"),
        ({"model.endpoint": 3}, "'model.endpoint'"),
    ],
)
def test_invalid_configs_name_the_key_and_the_file(tmp_path: Path, changes: dict, needle: str) -> None:
    path = write_config(tmp_path / "agents.yaml", **changes)
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=tmp_path)
    assert needle in str(caught.value) and str(path) in str(caught.value)
    assert "sk-oops" not in str(caught.value)


def test_overrides_apply_to_every_role(tmp_path: Path) -> None:
    write_config(tmp_path / "agents.yaml", **{"team.steps.4.model": {"endpoint": "openai", "name": "x"}})
    loaded = with_overrides(load_config(cwd=tmp_path), model="openai:gpt-4o-mini", threshold=4, max_rollbacks=3)
    assert loaded.config.critic.threshold == 4 and loaded.config.critic.max_rollbacks == 3
    models = resolve_models(loaded, {"OPENAI_API_KEY": "k" * 8}).models
    assert {m.model for m in models.values()} == {"gpt-4o-mini"}
    colon = with_overrides(load_config(cwd=tmp_path), model="llama3:8b")
    assert colon.config.model.name == "llama3:8b" and colon.config.model.endpoint == "auto"


def test_endpoint_resolution_order(tmp_path: Path) -> None:
    loaded = load_config(cwd=tmp_path)
    with_key = resolve_models(loaded, {"OPENAI_API_KEY": "sk-abcdef"})
    assert with_key.models["solver"].kind == "openai" and with_key.models["solver"].model == "gpt-4o"
    assert "OPENAI_API_KEY is set" in with_key.announcement and "sk-abcdef" not in with_key.announcement
    offline = resolve_models(loaded, {})
    assert offline.models["solver"].kind == "local" and offline.uses_local
    assert "embedded model" in offline.announcement and "not for answers" in offline.announcement
    explicit = resolve_models(with_overrides(loaded, model="local"), {"OPENAI_API_KEY": "sk-abcdef"})
    assert explicit.models["critic"].kind == "local"
    base = resolve_models(loaded, {"OPENAI_API_KEY": "sk-abcdef", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1/"})
    assert base.models["aligner"].base_url == "http://127.0.0.1:8000/v1"


def test_personalities_come_from_the_team(tmp_path: Path) -> None:
    seven = load_prompts(load_config(cwd=tmp_path))
    assert "Extraversion" in seven.system_message("interpreter") and "Sensitivity" in seven.system_message("critic")
    five = load_prompts(load_config(cwd=tmp_path, team=Path("big_five")))
    assert "Openness" in five.system_message("interpreter") and "Neuroticism" in five.system_message("critic")
    assert five.personalities["manager"] == "" and five.personalities["user_proxy"] == ""  # the Big Five version has none
    write_config(tmp_path / "agents.yaml", **{"team.steps.3.personality": "Calm and exact."})
    custom = load_prompts(load_config(cwd=tmp_path))
    assert "Your temperament: Calm and exact." in custom.system_message("solver")
    assert "Extraversion" in custom.system_message("interpreter")  # the other steps keep theirs


def test_prompt_variables_must_have_values() -> None:
    assert render("a {{x}} b {{ y }}", {"x": 1, "y": "z"}) == "a 1 b z"
    with pytest.raises(ConfigError, match="'{{missing}}' has no value"):
        render("{{missing}}", {})


def test_prompt_file_with_unknown_key(tmp_path: Path) -> None:
    (tmp_path / "solver.yaml").write_text("system: s\ninstruction: i\nrevision: r\nexamples: e\n")
    write_config(tmp_path / "agents.yaml", **{"team.steps.3.prompt": "solver.yaml"})
    with pytest.raises(ConfigError, match="unknown key 'examples'"):
        load_prompts(load_config(cwd=tmp_path))


def test_no_prompt_text_in_python() -> None:
    """Prompt text lives in prompts/: the role instructions appear in no Python module."""
    sources = "\n".join(p.read_text() for p in (REPO / "maps_autogen").rglob("*.py"))
    for phrase in ("You are the", "Socratic question", "Reply with one JSON object"):
        assert phrase not in sources


def test_wheel_ships_the_builtin_defaults(tmp_path: Path) -> None:
    """The defaults are plain package data (no build hook): the wheel carries every file."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path)],
                   check=True, capture_output=True)
    wheel = next(tmp_path.glob("maps_autogen-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        defaults = REPO / "maps_autogen" / "settings" / "defaults"
        shipped = [p for p in defaults.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        assert len(shipped) >= 14
        for path in shipped:
            assert archive.read(f"maps_autogen/settings/defaults/{path.relative_to(defaults).as_posix()}") == path.read_bytes()
    assert "maps_autogen/cli/__init__.py" in names
    assert {"maps_autogen/report/view/static/view.css", "maps_autogen/report/view/static/view.js"} <= names  # the viewer's assets
