"""docs/development.md's module map names exactly the modules of the package: a module added,
moved or removed without its line in the map fails here (and the map never names a module
that is not there)."""

from __future__ import annotations

import re
from pathlib import Path

import maps_autogen

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(maps_autogen.__file__).parent


def mapped_modules(text: str) -> set[str]:
    """The module files the "Module map" section of a development.md names (`maps_autogen/....py`)."""
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(maps_autogen/[\w/]+\.py)`", section))


def package_modules() -> set[str]:
    return {str(path.relative_to(REPO)) for path in PACKAGE.rglob("*.py")
            if path.name != "__init__.py" and "__pycache__" not in path.parts}


def test_the_reader_takes_the_map_section_only() -> None:
    text = ("## How it works\n- `maps_autogen/x/_a.py`: elsewhere\n## Module map\n\n- `maps_autogen/x/`\n"
            "  - `maps_autogen/x/_b.py`: mapped\n\n## Next\n- `maps_autogen/x/_c.py`\n")
    assert mapped_modules(text) == {"maps_autogen/x/_b.py"}


def test_the_module_map_names_exactly_the_modules_that_exist() -> None:
    mapped = mapped_modules((REPO / "docs" / "development.md").read_text(encoding="utf-8"))
    actual = package_modules()
    assert not actual - mapped, f"modules missing from docs/development.md's module map: {sorted(actual - mapped)}"
    assert not mapped - actual, f"the module map names modules that do not exist: {sorted(mapped - actual)}"
