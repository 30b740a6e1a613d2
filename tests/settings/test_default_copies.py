"""The repository's top-level agents.yaml and prompts/ are the user-facing copies of the
package's defaults: they must never drift from what `maps` actually loads."""

from __future__ import annotations

from pathlib import Path

from maps_autogen.settings._config import defaults_dir

REPO = Path(__file__).resolve().parents[2]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_top_level_agents_yaml_is_the_packaged_default() -> None:
    assert (REPO / "agents.yaml").read_bytes() == (defaults_dir() / "agents.yaml").read_bytes()


def test_top_level_prompts_are_the_packaged_prompts() -> None:
    top, packaged = _files(REPO / "prompts"), _files(defaults_dir() / "prompts")
    assert sorted(top) == sorted(packaged), "the same prompt files in both places"
    assert [name for name in top if top[name] != packaged[name]] == []
