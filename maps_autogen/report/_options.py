"""`maps report`'s options (and `maps_autogen.write_report`'s), declared once (settings/_options.py says
what is made from them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from maps_autogen.settings import Options, argument, option


@dataclass(frozen=True, kw_only=True)
class ReportOptions(Options):
    """What `maps report` compares, and where its tables and figures go."""

    runs: tuple[Path, ...] = argument("The eval run folders to compare.", kind="paths")
    out: Path | None = option(
        None, "--out", "Folder for the tables and figures (default: runs/report-<stamp>).", kind="path")
    paper: bool = option(
        False, "--paper", "Add the paper's Table 1 and Table 2 rows beside ours, with the difference, and "
        "random-choice rows.", kind="flag")
