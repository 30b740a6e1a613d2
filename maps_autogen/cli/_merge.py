"""`maps merge`: the shard runs of one evaluation combined through `api`'s merge."""

from __future__ import annotations

from typing import Any

import click

from maps_autogen.cli._shared import options_of, say
from maps_autogen.eval import MergeOptions


@click.command()
@options_of(MergeOptions)
def merge(**declared: Any) -> None:
    """Combine the shard runs of one evaluation into one run (refused when a shard or a
    problem is missing, unless --allow-incomplete)."""
    from maps_autogen.api import merge as merge_runs
    from maps_autogen.api import read_summary

    chosen = MergeOptions.from_cli(declared)
    outcome = merge_runs(chosen)
    summary = read_summary(outcome.out)
    for note in outcome.notes:
        say(f"note: {note}", err=True)
    click.echo(
        f"merged {len(chosen.runs)} runs into {outcome.out}: {summary.average.scored} scored, accuracy "
        f"{summary.average.accuracy}" + ("" if summary.complete else " (incomplete: see summary.json's missing)")
    )
