"""What the `maps` commands share: their click parameters made from the options declarations
(settings/_options.py), printing untrusted text, and the live viewer beside a run."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.core import ParameterSource

from maps_autogen.settings import Declared, Options, Spec

if TYPE_CHECKING:
    from maps_autogen.orchestration import HumanDesk
    from maps_autogen.report.view import ViewServer

F = TypeVar("F", bound=Callable[..., Any])


#: The options of the command running that took their value from an environment variable: each
#: flag (and alias) and the variable, so an error naming the flag names the variable the user set.
FROM_ENVIRONMENT: dict[str, str] = {}


class SafetySwitch(click.Option):
    """An option that lifts a safety bound (`Spec.safety`: --allow-outside-paths,
    --allow-private-urls, --host): set on the command line only, never by a variable (an exported
    one is named as ignored, cli/_main.py; a `.env` sets no MAPS_* variable at all)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_from_autoenv": False})


def options_of(declaration: type[Options], *, inherited: bool = True) -> Callable[[F], F]:
    """The click arguments and options of what `declaration` declares (its own only, without
    `inherited`), in its order: each one's flags, click name, type, bounds, default and help as
    declared, so every command that takes an option takes and documents it alike."""
    params = [_click_param(one) for one in declaration.declared(inherited=inherited)]

    def decorate(command: F) -> F:
        command = _noting_variables(command)
        for param in reversed(params):
            command = param(command)
        return command

    return decorate


def _noting_variables(command: F) -> F:
    """`command`, noting first which of its options took their value from a variable
    (`FROM_ENVIRONMENT`)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        context = click.get_current_context()
        for param in context.command.params:
            if (isinstance(param, click.Option) and param.name
                    and context.get_parameter_source(param.name) is ParameterSource.ENVIRONMENT):
                variable = param.envvar if isinstance(param.envvar, str) else \
                    f"{context.auto_envvar_prefix}_{param.name.upper()}"
                FROM_ENVIRONMENT.update(dict.fromkeys(param.opts, variable))
        return command(*args, **kwargs)

    return run  # type: ignore[return-value]


def _click_param(one: Declared) -> Callable[[F], F]:
    spec = one.spec
    if spec.argument:
        nargs = -1 if spec.kind == "paths" else 1
        return click.argument(one.dest, type=_click_type(spec), nargs=nargs, required=True)
    extra: dict[str, Any] = {}
    if spec.kind not in ("flag", "names") and one.default is not None:
        extra.update(default=one.default, show_default=True)
    if spec.safety:
        extra.update(cls=SafetySwitch)
    text = f"{spec.help} Command line only: no variable sets it." if spec.safety else spec.help
    return click.option(spec.flag, *spec.aliases, one.dest, type=_click_type(spec), help=text,
                        metavar=spec.metavar, is_flag=spec.kind == "flag", multiple=spec.kind == "names", **extra)


def _click_type(spec: Spec) -> click.ParamType[Any] | None:
    bounded = spec.low is not None or spec.high is not None
    if spec.kind == "whole":
        return click.IntRange(min=spec.low, max=spec.high) if bounded else click.INT  # type: ignore[arg-type]
    if spec.kind == "number":
        return click.FloatRange(min=spec.low, max=spec.high, min_open=spec.low_open) if bounded else click.FLOAT
    if spec.kind in ("path", "paths"):
        return click.Path(path_type=Path)
    if spec.kind == "choice":
        return click.Choice(spec.choices)
    return None  # text and names: click's STRING; a flag: its BOOL


def say(text: str, *, err: bool = False) -> None:
    """Print a line that may hold untrusted text: secrets masked, control characters escaped."""
    from maps_autogen._util import terminal_safe

    click.echo(terminal_safe(text), err=err)


def open_in_browser(url: str) -> None:
    """`--open`: hand `url` to the default browser; when there is none (no display, no browser
    installed), say so in one line on stderr: the page's path or URL is already printed."""
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        say(f"--open: no browser to open here (no display?); open {url} yourself", err=True)


def start_viewer(run_dir: Path, human: HumanDesk | None = None) -> ViewServer:
    """`--view`: the live viewer beside a running solve or eval, its URL on stderr (stdout may be --json);
    with `human`, the page answers the chat's pauses too."""
    from maps_autogen.report.view import ViewServer

    server = ViewServer(run_dir, human=human).start()
    click.echo(f"watch live: {server.url} (until this command ends; then: maps view {run_dir} --serve)", err=True)
    return server


def stop_viewers(viewers: list[ViewServer]) -> None:
    for viewer in viewers:
        viewer.close()
