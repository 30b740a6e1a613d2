"""`maps report`: the tables and figures comparing eval runs, through `api`'s write_report."""

from __future__ import annotations

from typing import Any

import click

from maps_autogen.cli._shared import options_of, say
from maps_autogen.report import ReportOptions


@click.command()
@options_of(ReportOptions)
def report(**declared: Any) -> None:
    """Tables and figures comparing eval runs (Table 1 and 2, Figures 4, 5 and 6, cost per role)."""
    from maps_autogen.api import write_report
    from maps_autogen.report._report import WHAT_EACH_FILE

    result = write_report(ReportOptions.from_cli(declared))
    say(result.markdown)
    folders = {path.parent for path in result.files}
    where = f" in {next(iter(folders))}" if len(folders) == 1 else ""
    say(f"wrote {len(result.files)} files{where}:")
    width = max(len(path.name) for path in result.files)
    for path in result.files:
        name = path.name if where else str(path)
        say(f"  {name:<{width}}  {WHAT_EACH_FILE.get(path.name, '')}".rstrip())
