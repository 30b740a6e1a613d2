"""Every command's options are declared once (maps_autogen/settings/_options.py, eval/_options.py,
scoring.ScoreOptions): walking each declaration finds every option on the command line (its
flag, help text, default and bounds), in the API function's signature and `Args:`
documentation, and in the options object the command line builds (for `maps eval`, the request
its runner runs); an option added to a declaration reaches all of them with no other change."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import maps_autogen
from maps_autogen._util._errors import UsageError
from maps_autogen.cli import ENV_PREFIX, cli
from maps_autogen.cli._shared import options_of
from maps_autogen.eval import EvalOptions, EvalRun, MergeOptions
from maps_autogen.eval._selection import Shard
from maps_autogen.model.local import ModelServerOptions
from maps_autogen.orchestration import SolveOptions
from maps_autogen.report import ReportOptions
from maps_autogen.report.view import ServeOptions, ViewOptions
from maps_autogen.scoring._score import ScoreOptions
from maps_autogen.settings._options import REQUIRED, Declared, Options, SettingsOptions, option, takes

# command, its declaration, the API function that runs it, and the values its required arguments need
COMMANDS: list[tuple[str, type[Options], Callable[..., Any], dict[str, Any]]] = [
    ("solve", SolveOptions, maps_autogen.solve, {}),
    ("eval", EvalOptions, maps_autogen.evaluate, {"benchmark": "custom"}),
    ("score", ScoreOptions, maps_autogen.score, {"benchmark": "mathvista", "file": "outputs.jsonl"}),
    ("merge", MergeOptions, maps_autogen.merge, {"runs": ["runs/a", "runs/b"]}),
    ("report", ReportOptions, maps_autogen.write_report, {"runs": ["runs/a"]}),
    ("view", ViewOptions, maps_autogen.write_view, {"run": "runs/a"}),
    ("view", ServeOptions, maps_autogen.serve_view, {"run": "runs/a"}),
    ("config", SettingsOptions, maps_autogen.effective_config, {}),
    ("serve", ModelServerOptions, maps_autogen.serve_model, {"model": "model.gguf"}),
]
IDS = [f"{command}-{declaration.__name__}" for command, declaration, _, _ in COMMANDS]


def words(text: str) -> str:
    return " ".join(text.split())


def click_param(command: click.Command, one: Declared) -> click.Parameter:
    (param,) = [param for param in command.params if param.name == one.dest]
    return param


def args_line(function: Callable[..., Any], name: str) -> str:
    """The line of the function's `Args:` documentation that documents `name`."""
    doc = inspect.getdoc(function) or ""
    assert "\nArgs:\n" in doc, doc
    args = doc.split("\nArgs:\n", 1)[1]
    (line,) = [line for line in args.splitlines() if re.match(rf"{name}( \(|:)", line.strip())]
    return line


def a_value(one: Declared) -> tuple[list[str], Any]:
    """A command line giving `one` a value other than its default, and the value it stands for."""
    spec = one.spec
    if spec.kind == "flag":
        return [spec.flag], not one.default
    if spec.kind == "whole":
        value = int(spec.low if spec.low is not None else 0) + 2
        return [spec.flag, str(value)], value
    if spec.kind == "number":
        value = (spec.high if spec.high is not None else (spec.low or 0) + 1) / 2 + (spec.low or 0) / 2
        return [spec.flag, str(value)], value
    if spec.kind == "choice":
        choice = next(choice for choice in spec.choices if choice != one.default)
        return [spec.flag, choice], choice
    if spec.kind == "path":
        return [spec.flag, f"folder/{one.name}"], Path(f"folder/{one.name}")
    if spec.kind == "names":
        return [spec.flag, "first", spec.flag, "second"], (frozenset if spec.distinct else tuple)(["first", "second"])
    assert spec.kind == "text", spec
    if spec.parse is not None:
        return [spec.flag, spec.example], spec.parse(spec.example)
    return [spec.flag, f"some {one.name}"], f"some {one.name}"


@pytest.mark.parametrize(("name", "declaration", "function", "required"), COMMANDS, ids=IDS)
def test_each_declared_option_is_on_the_command_line_and_in_the_api(
        name: str, declaration: type[Options], function: Callable[..., Any], required: dict[str, Any]) -> None:
    command = cli.commands[name]
    signature = inspect.signature(function)
    with click.Context(command, info_name=name, parent=click.Context(cli, info_name="maps",
                                                                       auto_envvar_prefix=ENV_PREFIX)) as context:
        help_text = words(command.get_help(context))
    for one in declaration.declared():
        spec, param = one.spec, click_param(command, one)
        # the command line: the flag, its help text, default and bounds as declared
        if spec.argument:
            assert isinstance(param, click.Argument) and param.required
        else:
            variable = f"{ENV_PREFIX}_{name.upper()}_{one.dest.upper()}"
            assert isinstance(param, click.Option) and spec.flag in param.opts and words(spec.help) in help_text
            if spec.safety:  # a safety switch: the command line only, said so, and no variable named
                assert param.help == f"{spec.help} Command line only: no variable sets it." and variable not in help_text
            else:
                assert param.help == spec.help and variable in help_text
            if spec.kind not in ("flag", "names") and one.default is not None:
                assert param.get_default(context) == one.default, one.name
            if spec.low is not None or spec.high is not None:
                assert isinstance(param.type, (click.IntRange, click.FloatRange))
                assert (param.type.min, param.type.max, param.type.min_open) == (spec.low, spec.high, spec.low_open)
        # the API: a keyword of the function, with the same default, documented with the same text
        parameter = signature.parameters[one.name]
        assert parameter.default == (inspect.Parameter.empty if one.default is REQUIRED else one.default), one.name
        line = args_line(function, one.name)
        assert words(spec.help) in words(line) and (spec.flag in line if spec.flag else True), line
    assert signature.parameters["options"].default is None  # or the whole object
    chosen = declaration.of(required, caller="test")
    assert all(getattr(chosen, key) is not None for key in required)


@pytest.mark.parametrize(("name", "declaration", "function", "required"), COMMANDS, ids=IDS)
def test_the_command_line_builds_the_object_the_api_builds_from_the_same_values(
        name: str, declaration: type[Options], function: Callable[..., Any], required: dict[str, Any]) -> None:
    """Each option given on the command line arrives in the options object under its name,
    as the same keyword given to the API makes it."""
    command = cli.commands[name]
    argv: list[str] = []
    expected: dict[str, Any] = {}
    for one in declaration.declared():
        if one.spec.argument:
            given = required[one.name]
            argv += [str(item) for item in given] if isinstance(given, list) else [str(given)]
            continue
        words_given, expected[one.name] = a_value(one)
        argv += words_given
    with command.make_context(name, argv, parent=click.Context(cli, info_name="maps")) as context:
        from_cli = declaration.from_cli(context.params)
    for key, value in expected.items():
        assert getattr(from_cli, key) == value, key
    assert from_cli == declaration.of({**required, **expected}, caller=getattr(function, "__name__", name))


def test_the_eval_runner_runs_the_options_object_itself() -> None:
    """`maps eval`'s request is its options object: the runner takes an EvalOptions, and the
    bounds it checks are the declaration's."""
    assert inspect.signature(EvalRun).parameters["request"].annotation in ("EvalOptions", EvalOptions)
    valid = EvalOptions(benchmark="custom")
    for one in EvalOptions.declared():
        spec = one.spec
        for outside in ([spec.low - 1] if spec.low is not None else []) + ([spec.high + 1] if spec.high is not None else []):
            with pytest.raises(UsageError, match=re.escape(f"{one.name} ({spec.flag})")):
                dataclasses.replace(valid, **{one.name: outside})


@dataclasses.dataclass(frozen=True, kw_only=True)
class _WithOneMore(EvalOptions):
    """EvalOptions with one option more, declared as any other is."""

    tries: int = option(2, "--tries", "How often a problem is tried.", kind="whole", low=1, high=5)


def test_an_option_declared_once_reaches_the_command_line_the_api_and_the_request() -> None:
    @click.command(name="eval")
    @options_of(_WithOneMore)
    def command(**declared: Any) -> None:
        seen.append(_WithOneMore.from_cli(declared))

    @takes(_WithOneMore)
    def api(*, options: _WithOneMore) -> _WithOneMore:
        """Run it."""
        return options

    seen: list[_WithOneMore] = []
    group = click.Group("maps", commands=[command], context_settings={"auto_envvar_prefix": ENV_PREFIX})
    runner = CliRunner()
    shown = runner.invoke(group, ["eval", "--help"], env={})
    assert shown.exit_code == 0 and "--tries" in shown.output
    assert "How often a problem is tried." in words(shown.output)
    assert runner.invoke(group, ["eval", "custom", "--tries", "4"]).exit_code == 0
    assert runner.invoke(group, ["eval", "custom"], env={"MAPS_EVAL_TRIES": "3"}).exit_code == 0
    assert [one.tries for one in seen] == [4, 3]
    assert runner.invoke(group, ["eval", "custom", "--tries", "6"]).exit_code == 2  # the declared bounds
    assert inspect.signature(api).parameters["tries"].default == 2
    assert "tries (--tries): How often a problem is tried." in words(inspect.getdoc(api) or "")
    assert api("custom", tries=5).tries == 5 and api("custom").tries == 2
    with pytest.raises(UsageError, match=r"tries \(--tries\) must be a whole number from 1 to 5, not 0"):
        api("custom", tries=0)


def test_keywords_and_an_options_object_are_one_way_in(tmp_path: Path) -> None:
    """The API takes the options as keywords, as an object, or both (the keywords over the
    object); a misspelt keyword or another command's object is one line naming the fix."""
    resumed = EvalOptions(benchmark="custom", resume=tmp_path / "eval-x", runs_dir=tmp_path)
    with pytest.raises(UsageError, match=r"--limit cannot change a resumed run"):
        maps_autogen.evaluate(resumed, limit=3)
    with pytest.raises(UsageError, match=r"--limit cannot change a resumed run"):
        maps_autogen.evaluate(options=resumed, limit=3)
    with pytest.raises(UsageError, match=r"evaluate\(\) has no argument 'limt'.*did you mean limit="):
        maps_autogen.evaluate("custom", limt=3)
    with pytest.raises(UsageError, match=r"evaluate\(\) takes a EvalOptions, not a SolveOptions"):
        maps_autogen.evaluate(SolveOptions())
    with pytest.raises(UsageError, match=r"evaluate\(\) needs benchmark"):
        maps_autogen.evaluate(limit=3)
    assert dataclasses.replace(resumed, limit=3).limit == 3 and Shard.parse("1/2") == EvalOptions(
        benchmark="custom", shard="1/2").shard
