"""`maps config`: the effective settings, through `api`'s effective_config."""

from __future__ import annotations

from typing import Any

import click

from maps_autogen.cli._shared import options_of, say
from maps_autogen.settings import SettingsOptions


@click.command(name="config")
@options_of(SettingsOptions)
def config_command(**declared: Any) -> None:
    """Print the effective configuration: the config file merged onto the built-in defaults (and
    the options given), with where each part came from, the team that runs, and each step's
    model, endpoint and sampling settings. Secrets are never printed: keys are named by their
    variables."""
    from maps_autogen.api import effective_config
    from maps_autogen.settings import step_lines

    effective = effective_config(SettingsOptions.from_cli(declared))
    say(effective.text)
    if effective.resolution is None:
        say(f"\n# not runnable as is: {effective.not_runnable}")
        return
    say("\n# Each step's model (endpoint, where it is served, the sampling settings its requests carry):")
    for line in step_lines(effective.resolution):
        say(f"#   {line}")
    say("# " + effective.resolution.announcement)
