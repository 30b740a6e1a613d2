"""Write docs/development.md's "Module map" section from the package: every module under its
package folder, with the first sentence of its docstring (tests/project/test_module_map.py
checks the section names exactly the modules that exist). Run: python scripts/module_map.py"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "maps_autogen"
DOC = REPO / "docs" / "development.md"
INTRO = ("Every module of the package, by layer package (tests/project/test_module_map.py checks that this list\n"
         "names exactly the modules that exist; `python scripts/module_map.py` writes it). Each package's\n"
         "`__init__.py` says what the layer owns.\n\n")


def summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n", 1)[0].split())
    return first.rstrip(".")


def section() -> str:
    lines: list[str] = []
    folders = sorted({path.parent for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts})
    for folder in folders:
        modules = sorted(path for path in folder.glob("*.py") if path.name != "__init__.py")
        if not modules:
            continue
        lines.append(f"- `{folder.relative_to(REPO)}/`")
        lines += [f"  - `{path.relative_to(REPO)}`: {summary(path)}" for path in modules]
    return "## Module map\n\n" + INTRO + "\n".join(lines) + "\n"


def main() -> None:
    text = DOC.read_text(encoding="utf-8")
    before, rest = text.split("## Module map", 1)
    after = rest.split("\n## ", 1)[1] if "\n## " in rest else None
    DOC.write_text(before + section() + ("\n## " + after if after is not None else ""), encoding="utf-8")


if __name__ == "__main__":
    main()
