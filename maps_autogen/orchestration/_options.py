"""`maps solve`'s options (and `maps_autogen.solve`'s), declared once (settings/_options.py says what is
made from them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from maps_autogen.settings import SettingsOptions, option


@dataclass(frozen=True, kw_only=True)
class SolveOptions(SettingsOptions):
    """What `maps solve` (and `maps_autogen.solve`) runs a problem with."""

    without: frozenset[str] = option(
        frozenset(), "--without", "Leave a step out (repeatable); docs/team.md.", kind="names",
        metavar="STEP", distinct=True)
    runs_dir: Path = option(Path("runs"), "--runs-dir", "Where run folders go.", kind="path", example="runs")
    allow_private_urls: bool = option(
        False, "--allow-private-urls", "Let the problem file's image URLs point at private addresses (loopback, "
        "LAN); trusted files only.", kind="flag", safety=True)
    allow_outside_paths: bool = option(
        False, "--allow-outside-paths", "Let the problem file's images be files outside its folder; trusted files "
        "only.", kind="flag", safety=True)
