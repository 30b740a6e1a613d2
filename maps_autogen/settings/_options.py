"""How every command's options are declared, once each, and the settings every model-calling command
shares (`SettingsOptions`); each command's own options class sits beside its command's layer.

An options class is a frozen dataclass whose fields are declared with `option()` (or
`argument()`): the name a Python caller passes, the command-line flag, the kind of value, the
default, the bounds and the help text. Everything else is made from that one declaration: the
command's click parameters (`maps_autogen.cli`), the API function's keyword arguments, signature
and `Args:` documentation (`takes`), its static types (api/_signatures.py, which
scripts/api_signatures.py writes from these declarations), and the check every value passes whichever way it came
(`Options.__post_init__`: a bad value is one UsageError naming the argument, its option and the
fix). The settings every model-calling command shares are `SettingsOptions` (bounded as
agents.yaml bounds the same keys). Each command's options sit in its layer: `maps solve`'s in
orchestration/_options.py, `maps score`'s in scoring/_score.py, `maps eval`'s (also the request its
runner runs) and `maps merge`'s in eval/_options.py, `maps report`'s in report/_options.py, `maps
view`'s in report/view/_options.py and `maps serve`'s in model/local/_options.py.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from maps_autogen._util import UsageError, pasted_keys, register_secret
from maps_autogen.settings._config import (
    EVERY_STEP_FLAGS,
    CriticConfig,
    EveryStepConfig,
    LoadedConfig,
)

#: What an option holds: text (`parse` may read it into a value), a whole number, a number, a
#: flag, one of `choices`, a file or folder, several of them, or a list of names.
Kind = Literal["text", "whole", "number", "flag", "choice", "path", "paths", "names"]
_SPEC = "option"  # the key of a field's declaration in its metadata
R = TypeVar("R")
OptionsT = TypeVar("OptionsT", bound="Options")


@dataclass(frozen=True)
class Spec:
    """One option's declaration: everything but its name and default (see `option`)."""

    flag: str  # "--limit"; "" for an argument
    help: str
    kind: Kind
    dest: str | None = None  # click's name for it when not the field's: it names MAPS_<COMMAND>_<DEST>
    aliases: tuple[str, ...] = ()  # further flags (--allow-model-change)
    metavar: str | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # above `low`, not at it
    unit: str = ""  # what a number counts ("USD"), for messages
    choices: tuple[str, ...] = ()
    negate: bool = False  # the flag sets the field to False (--no-cache: cache=False)
    argument: bool = False  # positional on the command line
    distinct: bool = False  # names kept as a set (steps left out)
    loaded: bool = False  # a path that may also be settings loaded before (a LoadedConfig)
    parse: Callable[[str], Any] | None = None  # text read into the field's value (`parsed`)
    parsed: type | None = None
    form: str = ""  # the form `parse` reads ("i/n"), for messages
    example: str = ""  # a good value, for messages
    fixed_on_resume: bool = False  # chooses problems or rules: a resumed run's manifest fixes it
    safety: bool = False  # lifts a safety bound: from the command line (or the API) only, never a variable

    def label(self, name: str) -> str:
        """How the command line names it: its flag, or the argument's name."""
        return self.flag or name.upper()

    def checked(self, name: str, value: Any, default: Any) -> Any:
        """`value` as the field holds it (a path as a Path, names as a tuple or set), or a
        UsageError naming `name`, its option and the fix; None stays None where it is the default."""
        if value is None and default is None and self.kind not in ("names", "flag"):
            return None
        return _CHECKS[self.kind](self, name, value, default)

    def bounds_text(self) -> str:
        low = None if self.low is None else f"{self.low:g}"
        high = None if self.high is None else f"{self.high:g}"
        above = f"above {low}" if self.low_open else f"at least {low}"
        if low is not None and high is not None:
            return f" above {low} and at most {high}" if self.low_open else f" from {low} to {high}"
        return f" of {above}" if low is not None else f" of at most {high}" if high is not None else ""

    def within(self, value: float) -> bool:
        low_ok = self.low is None or (value > self.low if self.low_open else value >= self.low)
        return low_ok and (self.high is None or value <= self.high)


def option(default: Any, flag: str, help: str, *, kind: Kind, **spec: Any) -> Any:
    """A field of an options class: its default, command-line flag, help text, kind of value
    and the rest of its `Spec`."""
    return dataclasses.field(default=default, metadata={_SPEC: Spec(flag, help, kind, **spec)})


def argument(help: str, *, kind: Kind, **spec: Any) -> Any:
    """A required field given by position on the command line (and first in the API's
    signature)."""
    return dataclasses.field(metadata={_SPEC: Spec("", help, kind, argument=True, **spec)})


def bounds(model: type[BaseModel], key: str) -> dict[str, Any]:
    """The bounds agents.yaml's `model` declares for `key`, as an option's `low`, `high`,
    `low_open`: an option that overrides a config key is bounded as the key is."""
    found: dict[str, Any] = {}
    for constraint in model.model_fields[key].metadata:
        for attribute, spec_key, open_low in (("ge", "low", False), ("gt", "low", True), ("le", "high", False)):
            value = getattr(constraint, attribute, None)
            if value is not None:
                found[spec_key] = value
                if spec_key == "low":
                    found["low_open"] = open_low
    return found


class _Required:
    """The default of a field without one (an argument)."""

    def __repr__(self) -> str:
        return "required"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Declared:
    """One declared option of an options class: its name, declaration and default."""

    name: str
    spec: Spec
    default: Any

    @property
    def dest(self) -> str:
        return self.spec.dest or self.name


@dataclass(frozen=True, kw_only=True)
class Options:
    """The base of every command's options: each field declared with `option()` or `argument()`,
    every value checked (and made the field's type) when the object is made, also by
    `dataclasses.replace`."""

    def __post_init__(self) -> None:
        for declared in self.declared():
            given = getattr(self, declared.name)
            register_pasted_keys(given)  # a key pasted where a name or a path goes is never echoed
            value = declared.spec.checked(declared.name, given, declared.default)
            object.__setattr__(self, declared.name, value)

    @classmethod
    def declared(cls, *, inherited: bool = True) -> list[Declared]:
        """The declared fields: the arguments, then the class's own options, then those it
        inherits (the order of `--help`, the API's signature and its documentation); without
        `inherited`, the class's own only."""
        by_name = {field.name: field for field in dataclasses.fields(cls) if _SPEC in field.metadata}
        names: list[str] = []
        for klass in cls.__mro__ if inherited else (cls,):
            if not dataclasses.is_dataclass(klass):
                continue
            from_bases = {field.name for base in klass.__bases__ if dataclasses.is_dataclass(base)
                          for field in dataclasses.fields(base)}
            names += [field.name for field in dataclasses.fields(klass)
                      if field.name in by_name and field.name not in from_bases and field.name not in names]
        declared = [Declared(name, by_name[name].metadata[_SPEC], _default(by_name[name])) for name in names]
        return sorted(declared, key=lambda one: not one.spec.argument)

    @classmethod
    def of(cls: type[OptionsT], values: Mapping[str, Any], *, base: Options | None = None, caller: str) -> OptionsT:
        """The options from the keyword arguments of `caller` (over `base`, a whole options
        object, when one is given): an unknown or missing argument is a UsageError."""
        declared = cls.declared()
        known = [one.name for one in declared]
        for name in values:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                raise UsageError(f"{caller}() has no argument {name!r}",
                                 fix=f"did you mean {close[0]}=?" if close else f"use one of: {', '.join(known)}")
        if base is not None:
            if not isinstance(base, cls):
                raise UsageError(f"{caller}() takes a {cls.__name__}, not a {type(base).__name__}",
                                 fix=f"pass {cls.__name__}(...) or keyword arguments")
            return dataclasses.replace(base, **values)
        for one in declared:
            if one.default is REQUIRED and one.name not in values:
                raise UsageError(f"{caller}() needs {one.name}", fix=f"pass {one.name}=: {one.spec.help}")
        return cls(**values)

    @classmethod
    def from_cli(cls: type[OptionsT], params: Mapping[str, Any]) -> OptionsT:
        """The options a command line gave (`params`: click's parameters by name, the
        command's own among them)."""
        values = {}
        for one in cls.declared():
            value = params[one.dest]
            values[one.name] = (not value) if one.spec.negate else value
        return cls(**values)


def register_pasted_keys(value: Any) -> None:
    """Register every part of an option's value shaped like an API key (text, a path, names)."""
    for item in value if isinstance(value, (tuple, list, set, frozenset)) else (value,):
        if isinstance(item, (str, os.PathLike)):
            for key in pasted_keys(str(item)):
                register_secret(key)


def _default(field: dataclasses.Field[Any]) -> Any:
    return REQUIRED if field.default is dataclasses.MISSING else field.default


# ----- the checks, one per kind ----------------------------------------------------------------


def _number(spec: Spec, name: str, value: Any, default: Any) -> Any:
    whole = spec.kind == "whole"
    fits = not isinstance(value, bool) and (
        isinstance(value, int) if whole else isinstance(value, (int, float)) and math.isfinite(value))
    if fits and spec.within(value):
        return value
    what = ("a whole number" if whole else "a number") + (f" of {spec.unit}" if spec.unit else "")
    leave = ", or leave it out" if default is None else ""
    example = spec.example or (f"{spec.low:g}" if spec.low is not None and not spec.low_open else "0" if whole else "1")
    raise UsageError(f"{name} ({spec.label(name)}) must be {what}{spec.bounds_text()}, not {value!r}",
                     fix=f"e.g. {spec.label(name)} {example}{leave}")


def _flag(spec: Spec, name: str, value: Any, default: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise UsageError(f"{name}= must be True or False, not {type(value).__name__}", fix=f"e.g. {name}={not default}")


def _choice(spec: Spec, name: str, value: Any, default: Any) -> str:
    if isinstance(value, str) and value in spec.choices:
        return value
    raise UsageError(f"unknown {name} {value!r}", fix=f"use one of: {', '.join(spec.choices)}")


def _text(spec: Spec, name: str, value: Any, default: Any) -> Any:
    if spec.parsed is not None and isinstance(value, spec.parsed):
        return value
    if not isinstance(value, str):
        form = f" of the form {spec.form}" if spec.form else ""
        raise UsageError(f"{name}= must be text{form}, not {type(value).__name__}",
                         fix=f"e.g. {name}={spec.example!r}" if spec.example else f"pass {name}= a str")
    if spec.parse is None:
        return value
    return spec.parse(value) if value or default is not None else None  # an empty --shard is none


def _path(spec: Spec, name: str, value: Any, default: Any) -> Any:
    if spec.loaded and isinstance(value, LoadedConfig):
        return value
    if not isinstance(value, (str, os.PathLike)) or (isinstance(value, str) and not value):
        raise UsageError(f"{name}= must be a path (a str or os.PathLike), not {type(value).__name__} {value!r:.40}",
                         fix=f"e.g. {name}={spec.example!r}" if spec.example else f"pass {name}= a file or folder path")
    return Path(value)


def _several(spec: Spec, name: str, value: Any) -> tuple[Any, ...]:
    """A list given as one: a bare str (or path) is one item, never its letters."""
    if value is None:
        return ()
    if isinstance(value, (str, os.PathLike)):
        return (value,)
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, Iterable):
        what = "names" if spec.kind == "names" else "paths"
        raise UsageError(f"{name}= must be a list of {what}, not {type(value).__name__}", fix=f"e.g. {name}=['...']")
    return tuple(value)


def _names(spec: Spec, name: str, value: Any, default: Any) -> tuple[str, ...] | frozenset[str]:
    names = _several(spec, name, value)
    if not all(isinstance(item, str) for item in names):
        raise UsageError(f"{name}= must be a list of names (str)", fix=f"e.g. {name}=['...']")
    return frozenset(names) if spec.distinct else names


def _paths(spec: Spec, name: str, value: Any, default: Any) -> tuple[Path, ...]:
    paths = tuple(_path(spec, name, item, None) for item in _several(spec, name, value))
    if not paths and default is REQUIRED:
        raise UsageError(f"{name}= names no folder", fix=f"e.g. {name}=['runs/<id>']")
    return paths


_CHECKS: dict[str, Callable[[Spec, str, Any, Any], Any]] = {
    "text": _text, "whole": _number, "number": _number, "flag": _flag, "choice": _choice, "path": _path,
    "paths": _paths, "names": _names,
}


# ----- the API functions made from a declaration -----------------------------------------------


def takes(options_class: type[Options], *, positional: Sequence[str] | None = None
          ) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """An API function made from `function(*own, options=..., **own_keywords)`: it takes each
    option `options_class` declares as a keyword (the declared arguments, or `positional`, also
    by position after the function's own), or a whole options object (by position there, or as
    `options=`, the keywords then applied over it); its signature and the `Args:` part of its
    documentation are made from the declaration."""

    def decorate(function: Callable[..., R]) -> Callable[..., R]:
        own = inspect.signature(function).parameters
        own_positional = [p.name for p in own.values() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        own_names = set(own) - {"options"}
        declared = options_class.declared()
        by_position = list(positional) if positional is not None else [d.name for d in declared if d.spec.argument]

        @functools.wraps(function)
        def api(*args: Any, **keywords: Any) -> R:
            mine = dict(zip(own_positional, args))
            rest = list(args[len(own_positional):])
            base = keywords.pop("options", None)
            if rest and isinstance(rest[0], Options):
                base = rest.pop(0)
            if len(rest) > len(by_position):
                raise UsageError(f"{function.__name__}() takes {len(own_positional) + len(by_position)} positional "
                                 f"argument(s), not {len(args)}", fix="pass the others by name")
            extras = {name: keywords.pop(name) for name in list(keywords) if name in own_names}
            values = {**dict(zip(by_position, rest)), **keywords}
            options = options_class.of(values, base=base, caller=function.__name__)
            return function(**mine, **extras, options=options)

        returns = inspect.signature(function).return_annotation
        api.__signature__ = _signature(own, options_class, by_position, returns)  # type: ignore[attr-defined]
        api.__doc__ = (function.__doc__ or "").rstrip() + "\n\n" + args_doc(declared)
        return api

    return decorate


def _api_type(spec: Spec, default: Any) -> Any:
    base: Any = {"text": str, "whole": int, "number": float, "flag": bool, "choice": str,
                 "path": str | os.PathLike[str], "paths": Iterable[str | os.PathLike[str]],
                 "names": Iterable[str]}[spec.kind]
    if spec.loaded:
        base = base | LoadedConfig
    if spec.parsed is not None:  # the text, or the value it is read into
        base = base | spec.parsed
    return base | None if default is None else base


def _signature(own: Mapping[str, inspect.Parameter], options_class: type[Options], by_position: Sequence[str],
               returns: Any) -> inspect.Signature:
    """The function's own positional parameters, the declared ones (those given by position
    first), then the function's own keyword-only ones (`options`: a whole `options_class`, or None)."""
    parameter = inspect.Parameter
    declared = options_class.declared()
    params = [p for p in own.values() if p.kind is parameter.POSITIONAL_OR_KEYWORD]
    for kind, chosen in ((parameter.POSITIONAL_OR_KEYWORD, [d for d in declared if d.name in by_position]),
                         (parameter.KEYWORD_ONLY, [d for d in declared if d.name not in by_position])):
        params += [parameter(d.name, kind, default=parameter.empty if d.default is REQUIRED else d.default,
                             annotation=_api_type(d.spec, d.default)) for d in chosen]
    params += [p.replace(default=None, annotation=options_class | None) if p.name == "options" else p
               for p in own.values() if p.kind is parameter.KEYWORD_ONLY]
    return inspect.Signature(params, return_annotation=returns)


def args_doc(declared: Sequence[Declared]) -> str:
    """The `Args:` part of an API function's documentation: each option's help text, under
    its name and the flag that sets it on the command line."""
    lines = ["    Args:"]
    for one in declared:
        spec = one.spec
        where = f"False: {spec.flag}" if spec.negate else spec.flag
        lines.append(f"        {one.name}{f' ({where})' if where else ''}: {spec.help}")
    return "\n".join(lines)


# ----- the declarations --------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class SettingsOptions(Options):
    """The settings a run uses, as `maps solve`, `maps eval` and `maps config` read them: which
    agents.yaml, model and team, the reviewer's bounds, the sampling settings for every step."""

    config: Path | LoadedConfig | None = option(
        None, "--config", "agents.yaml to use (default: ./agents.yaml, else the built-in one).", kind="path",
        dest="config_file", loaded=True)
    config_list: str | None = option(
        None, "--config-list", "An AG2 OAI_CONFIG_LIST: a JSON file, or a variable holding the JSON or the file's "
        "path; its models become endpoints.", kind="text")
    model: str | None = option(
        None, "--model", "Model for every role: NAME, ENDPOINT:NAME, or an endpoint name (e.g. local).", kind="text")
    threshold: float | None = option(
        None, "--threshold", "Reviewer pass threshold on the team's scale (1-5 by default, at most its highest "
        "score; overrides critic.threshold).", kind="number", **bounds(CriticConfig, "threshold"))
    max_rollbacks: int | None = option(
        None, "--max-rollbacks", "Maximum rollbacks (overrides critic.max_rollbacks).", kind="whole",
        **bounds(CriticConfig, "max_rollbacks"))
    team: Path | None = option(
        None, "--team", "A team file (or a built-in team: maps, the default, or big_five) instead of the config's "
        "team.", kind="path", dest="team_file")
    # The sampling settings sent with every step's request, over each step's own (every_step: in agents.yaml).
    temperature: float | None = option(
        None, EVERY_STEP_FLAGS["temperature"], "Sampling temperature for every step (over each step's own; "
        "every_step.temperature).", kind="number", **bounds(EveryStepConfig, "temperature"))
    top_p: float | None = option(
        None, EVERY_STEP_FLAGS["top_p"], "Nucleus sampling top_p for every step (every_step.top_p).", kind="number",
        **bounds(EveryStepConfig, "top_p"))
    seed: int | None = option(
        None, EVERY_STEP_FLAGS["seed"], "The models' sampling seed, sent with every step's request "
        "(every_step.seed); a service that honours it repeats its sampling.", kind="whole")
    max_tokens: int | None = option(
        None, EVERY_STEP_FLAGS["max_tokens"], "Reply cap for every step, over each step's own "
        "(every_step.max_tokens).", kind="whole", **bounds(EveryStepConfig, "max_tokens"))

    def every_step(self) -> dict[str, Any]:
        """The sampling settings for every step, by their agents.yaml keys (None: not given)."""
        return {key: getattr(self, key) for key in EVERY_STEP_FLAGS}


__all__ = ["REQUIRED", "Declared", "Kind", "Options", "SettingsOptions", "Spec", "argument", "args_doc", "bounds",
           "option", "takes"]
