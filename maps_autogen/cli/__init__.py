"""The `maps` command line: thin commands over the public Python API (`maps_autogen.api._api`), one
module per command, their options made from the declarations in options.py (`shared.py`).

This module holds the group and the entry point, the one place where domain errors become
one-line messages and exit codes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from maps_autogen._util import MapsError
from maps_autogen.cli.config import config_command
from maps_autogen.cli.eval import eval_command
from maps_autogen.cli.merge import merge
from maps_autogen.cli.report import report
from maps_autogen.cli.score import score
from maps_autogen.cli.serve import serve_command
from maps_autogen.cli.shared import say
from maps_autogen.cli.solve import solve
from maps_autogen.cli.view import view

#: Every option of every command can come from an environment variable named MAPS_<COMMAND>_<OPTION>
#: (click's auto_envvar_prefix: MAPS_EVAL_CONCURRENCY for `maps eval --concurrency`); the command
#: line wins over the variable, the variable over the default; `--help` names each one.
ENV_PREFIX = "MAPS"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": ENV_PREFIX})
@click.version_option(package_name="maps-autogen", allow_from_autoenv=False)  # MAPS_VERSION=1 must not print it
def cli() -> None:
    """MAPS: a team of LLM agents solving multimodal scientific problems.

    Every option can also be set by an environment variable MAPS_<COMMAND>_<OPTION> (e.g.
    MAPS_EVAL_MAX_TOKENS=1024 for maps eval --max-tokens 1024); each command's --help names them."""
    _load_env()
    _register_keys()


for _command in (solve, score, eval_command, config_command, merge, report, view, serve_command):
    cli.add_command(_command)


def _register_keys() -> None:
    """Before any command runs, the one place every command's masking starts: the well-known key
    variables and the api_key_env of every endpoint of the default config (./agents.yaml, else
    the built-in one) are registered, so `maps view`, `--serve` and `maps score` mask a key found
    in the files they read just as solve and eval do (which also register their --config's)."""
    from maps_autogen._util import register_key_variables, register_secret, register_well_known_keys
    from maps_autogen.settings import configured_secrets

    register_well_known_keys()
    key_variables, inline_keys = configured_secrets()  # the config read once
    register_key_variables(key_variables)
    for key in inline_keys:  # written in an AG2 config list that agents.yaml names
        register_secret(key)


def _load_env() -> None:
    from dotenv import load_dotenv

    load_dotenv(Path.cwd() / ".env", override=False)


def _configure_logging() -> None:
    """Warnings to stderr, one line each, with every registered secret masked."""
    import logging

    from maps_autogen._util import RedactingFilter

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    for handler in logging.getLogger().handlers:
        if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
            handler.addFilter(RedactingFilter())


def _show_env_variables(group: click.Group) -> None:
    """Each option's --help names the environment variable that can set it."""
    for command in group.commands.values():
        for param in command.params:
            if isinstance(param, click.Option) and param.allow_from_autoenv:
                param.show_envvar = True


def _from_environment(error: click.BadParameter) -> None:
    """A bad value that came from an environment variable: the message names the variable."""
    from click.core import ParameterSource

    param, ctx = error.param, error.ctx
    if param is None or ctx is None or param.name is None:
        return
    if ctx.get_parameter_source(param.name) is not ParameterSource.ENVIRONMENT:
        return
    variable = param.envvar if isinstance(param.envvar, str) else f"{ctx.auto_envvar_prefix}_{param.name.upper()}"
    error.param_hint = f"{param.get_error_hint(ctx)} (from the environment variable {variable})"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `maps` console script."""
    from maps_autogen._util import stop_like_ctrl_c, stopped_by

    _configure_logging()
    stop_like_ctrl_c()  # SIGTERM stops every command as the first Ctrl-C does
    try:
        cli.main(args=argv, prog_name="maps", standalone_mode=False)
    except MapsError as error:
        # One line per problem (a data check may report several bad rows).
        for line in str(error).splitlines():
            say(f"error: {line}", err=True)
        sys.exit(error.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt) as stop:  # click raises Abort for a KeyboardInterrupt
        said, code = stopped_by(stop)
        click.echo(said, err=True)
        sys.exit(code)
    except BrokenPipeError:  # the reader of standard output went away (`maps ... | head`): end quietly
        from maps_autogen._util import OUTPUT_CLOSED_EXIT_CODE, silence_stdout

        silence_stdout()
        sys.exit(OUTPUT_CLOSED_EXIT_CODE)
    except click.ClickException as error:
        if isinstance(error, click.BadParameter):
            _from_environment(error)
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    sys.exit(0)


_show_env_variables(cli)

__all__ = ["ENV_PREFIX", "cli", "main"]
