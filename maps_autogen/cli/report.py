"""`maps report`: the tables and figures comparing eval runs, through `api`'s write_report."""

from __future__ import annotations

from typing import Any

import click

from maps_autogen.cli.shared import options_of, say
from maps_autogen.settings import ReportOptions


@click.command()
@options_of(ReportOptions)
def report(**declared: Any) -> None:
    """Tables and figures comparing eval runs (Table 1 and 2, Figures 4, 5 and 6, cost per role)."""
    from maps_autogen.api import write_report

    result = write_report(ReportOptions.from_cli(declared))
    say(result.markdown)
    say("wrote: " + ", ".join(str(path) for path in result.files))
