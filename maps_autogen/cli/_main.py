"""The `maps` group and its entry point (`maps_autogen.cli.main`, the console script): the one place
where domain errors become one-line messages and exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from maps_autogen._util import MapsError
from maps_autogen.cli._config import config_command
from maps_autogen.cli._eval import eval_command
from maps_autogen.cli._merge import merge
from maps_autogen.cli._report import report
from maps_autogen.cli._score import score
from maps_autogen.cli._serve import serve_command
from maps_autogen.cli._shared import FROM_ENVIRONMENT, SafetySwitch, say
from maps_autogen.cli._solve import solve
from maps_autogen.cli._view import view

#: Every option of every command can come from an environment variable named MAPS_<COMMAND>_<OPTION>
#: (click's auto_envvar_prefix: MAPS_EVAL_CONCURRENCY for `maps eval --concurrency`); the command
#: line wins over the variable, the variable over the default; `--help` names each one.
ENV_PREFIX = "MAPS"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": ENV_PREFIX})
@click.version_option(package_name="maps-autogen", allow_from_autoenv=False)  # MAPS_VERSION=1 must not print it
def cli() -> None:
    """MAPS: a team of LLM agents solving multimodal scientific problems.

    Every option can also be set by an environment variable MAPS_<COMMAND>_<OPTION> (e.g.
    MAPS_EVAL_MAX_TOKENS=1024 for maps eval --max-tokens 1024), taken whole; each command's
    --help names them. A safety switch (--allow-outside-paths...) is set on the command line
    only. A .env in the working folder gives keys and endpoints only."""
    FROM_ENVIRONMENT.clear()
    _load_env()
    _register_keys()
    _ignored_safety_variables()


for _command in (solve, score, eval_command, config_command, merge, report, view, serve_command):
    cli.add_command(_command)


def _register_keys() -> None:
    """Before any command runs, the one place every command's masking starts: the well-known key
    variables and the api_key_env of every endpoint of the default config (./agents.yaml, else
    the built-in one) are registered, so `maps view`, `--serve` and `maps score` mask a key found
    in the files they read just as solve and eval do (which also register their --config's)."""
    from maps_autogen._util import register_key_variables, register_secret, register_well_known_keys
    from maps_autogen.settings import apply_dotenv, configured_secrets

    register_well_known_keys()
    key_variables, inline_keys = configured_secrets()  # the config read once
    apply_dotenv(key_variables)  # an endpoint's own key variable, from ./.env
    register_key_variables(key_variables)
    for key in inline_keys:  # written in an AG2 config list that agents.yaml names
        register_secret(key)


def _load_env() -> None:
    """./.env, for keys and endpoints only (settings/_dotenv.py); the MAPS_* settings it holds
    are named as ignored."""
    from maps_autogen.settings import load_dotenv

    for note in load_dotenv(Path.cwd()):
        say(f"note: {note}", err=True)


def _ignored_safety_variables() -> None:
    """A variable naming a safety switch of the command about to run (MAPS_EVAL_ALLOW_OUTSIDE_PATHS)
    sets nothing: said in one line, so the user passes the flag if they mean it."""
    import os

    context = click.get_current_context()
    command = cli.commands.get(context.invoked_subcommand or "")
    if command is None:
        return
    for param in command.params:
        variable = f"{ENV_PREFIX}_{(command.name or '').upper()}_{(param.name or '').upper()}"
        if isinstance(param, SafetySwitch) and os.environ.get(variable):
            say(f"note: {variable} is ignored: {param.opts[0]} lifts a safety bound and is given on the command line "
                "only", err=True)


def _by_variable(line: str) -> str:
    """An error line naming an option whose value came from a variable names the variable (the
    user never typed the flag)."""
    import re

    for flag, variable in FROM_ENVIRONMENT.items():
        line = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", variable, line)
    return line


def _configure_logging() -> None:
    """Warnings to stderr, one line each, with every registered secret masked."""
    import logging

    from maps_autogen._util import RedactingFilter

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    for handler in logging.getLogger().handlers:
        if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
            handler.addFilter(RedactingFilter())


def _show_env_variables(group: click.Group) -> None:
    """Each option's --help names the environment variable that can set it; a repeatable option
    takes its variable's value whole (`MAPS_SOLVE_OPTIONS="12 cm"` is one option, not two)."""
    for command in group.commands.values():
        for param in command.params:
            if isinstance(param, click.Option) and param.allow_from_autoenv:
                param.show_envvar = True
                if param.multiple or param.nargs != 1:
                    param.value_from_envvar = _whole_value(param)  # type: ignore[method-assign]


def _whole_value(param: click.Option) -> Any:
    """`value_from_envvar` for a repeatable option: the variable's value, whole, as one value."""

    def value_from_envvar(ctx: click.Context) -> tuple[str, ...] | None:
        value = param.resolve_envvar_value(ctx)
        return None if value is None else (value,)

    return value_from_envvar


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


def _register_pasted_keys(argv: list[str]) -> None:
    """Before anything can echo it (an error naming a value, click's own messages): every part
    of the command line and of the MAPS_* variables shaped like an API key is a secret, whatever
    option it was given to (a key pasted into --team, --without or --concurrency)."""
    import os

    from maps_autogen._util import pasted_keys, register_secret

    for value in [*argv, *(value for name, value in os.environ.items() if name.startswith(f"{ENV_PREFIX}_"))]:
        for key in pasted_keys(value):
            register_secret(key)


def _show(error: click.ClickException) -> None:
    """click's own error message (a bad value, an unknown option), as click writes it, with
    secrets masked and control characters escaped."""
    import io

    from maps_autogen._util import terminal_safe

    written = io.StringIO()
    error.show(file=written)
    click.echo(terminal_safe(written.getvalue()), err=True, nl=False)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `maps` console script. Once the command's exit code is decided, a
    SIGTERM changes nothing (`finished`): the process exits with that code, never by the raw
    signal; one that arrives before is the documented stop (143)."""
    from maps_autogen._util import finished, stop_like_ctrl_c, stopped_by

    _register_pasted_keys(sys.argv[1:] if argv is None else argv)
    _configure_logging()
    stop_like_ctrl_c()  # SIGTERM stops every command as the first Ctrl-C does
    try:
        code = _run(argv)
        finished()
    except (click.exceptions.Abort, KeyboardInterrupt) as stop:  # a signal on the way out of _run
        said, code = stopped_by(stop)
        click.echo(said, err=True)
        finished()
    sys.exit(code)


def _run(argv: list[str] | None) -> int:
    """Run the command; its exit code, its errors turned into one-line messages."""
    from maps_autogen._util import stopped_by

    try:
        cli.main(args=argv, prog_name="maps", standalone_mode=False)
    except MapsError as error:
        # One line per problem (a data check may report several bad rows).
        for line in str(error).splitlines():
            say(f"error: {_by_variable(line)}", err=True)
        return error.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt) as stop:  # click raises Abort for a KeyboardInterrupt
        said, code = stopped_by(stop)
        click.echo(said, err=True)
        return code
    except BrokenPipeError:  # the reader of standard output went away (`maps ... | head`): end quietly
        from maps_autogen._util import OUTPUT_CLOSED_EXIT_CODE, silence_stdout

        silence_stdout()
        return OUTPUT_CLOSED_EXIT_CODE
    except click.ClickException as error:
        if isinstance(error, click.BadParameter):
            _from_environment(error)
        _show(error)
        return error.exit_code
    except click.exceptions.Exit as done:
        return done.exit_code
    return 0


_show_env_variables(cli)
