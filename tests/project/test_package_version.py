"""The version is written once, in pyproject.toml: `maps_autogen.__version__`, `maps --version`
and the `maps_version` a run records read it from the installed package's metadata, and no
module of the package spells it out."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import maps_autogen
from maps_autogen._util._version import package_version
from tests.helpers.common import REPO, clean_env, run_maps


def test_the_version_comes_from_the_package_metadata(tmp_path: Path) -> None:
    written = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert maps_autogen.__version__ == importlib.metadata.version("maps-autogen") == package_version() == written
    shown = run_maps(["--version"], env=clean_env(), cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.split()[-1] == written, shown.stdout
    spelt = [path.relative_to(REPO).as_posix() for path in (REPO / "maps_autogen").rglob("*.py")
             if f'"{written}"' in path.read_text() or f"'{written}'" in path.read_text()]
    assert spelt == []
