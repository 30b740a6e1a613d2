"""`maps score`: recorded model outputs scored again through `api`'s score."""

from __future__ import annotations

from typing import Any

import click

from maps_autogen.cli._shared import options_of, say
from maps_autogen.scoring import ScoreOptions


@click.command()
@options_of(ScoreOptions)
def score(**declared: Any) -> None:
    """Re-score recorded model outputs with the benchmark's official rules."""
    from maps_autogen.api import score as score_outputs
    from maps_autogen.scoring import render_summary

    report = score_outputs(ScoreOptions.from_cli(declared))
    for skipped in report.skipped:
        say(f"warning: line {skipped.line_no}: {skipped.reason}", err=True)
    say(render_summary(report))
