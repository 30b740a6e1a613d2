"""YAML read safely: bounded in size and nesting, integers bounded in length, aliases refused
where a file has no use for them (a billion-laughs file is one error line, not a memory bomb)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from maps_autogen._util import MAX_NESTING, ConfigError, TooDeep, valid_tree


class _BoundedLoader(yaml.SafeLoader):
    """A safe loader that refuses nesting deeper than MAX_NESTING (composing nodes recurses:
    a few hundred levels would end in a RecursionError)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self._depth >= MAX_NESTING:
            event = self.peek_event()  # type: ignore[no-untyped-call]  # (unannotated in types-PyYAML)
            too_deep = f"nested more than {MAX_NESTING} levels deep"
            raise yaml.composer.ComposerError(None, None, too_deep, event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_MAX_INT_CHARS = 4000  # below Python's 4,300-digit limit; converting longer integers costs quadratic time


def _bounded_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """YAML's integer (decimal, hex, octal, binary, base 60), refused past _MAX_INT_CHARS
    characters: a number-shaped scalar in an untrusted file must not cost seconds or crash."""
    if len(node.value) > _MAX_INT_CHARS:
        raise yaml.constructor.ConstructorError(
            None, None, f"a number of more than {_MAX_INT_CHARS:,} characters", node.start_mark)
    return loader.construct_yaml_int(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


class _NoAliasLoader(_BoundedLoader):
    """A bounded loader that also refuses aliases (`*name`), so a small untrusted file cannot
    expand into gigabytes (the "billion laughs" bomb)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # (unannotated in types-PyYAML)
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in this file", event.start_mark
            )
        return super().compose_node(parent, index)


def read_yaml(path: Path, *, allow_aliases: bool = True, max_bytes: int | None = None, limit_name: str = "") -> Any:
    """Read a YAML file, turning every failure into a one-line ConfigError. Nesting is bounded
    (MAX_NESTING) and lone surrogates (a "\\udcff" escape) become U+FFFD. Untrusted files pass
    `allow_aliases=False` and a `max_bytes` bound (named `limit_name` in the error)."""
    try:
        if max_bytes is not None and path.stat().st_size > max_bytes:
            raise ConfigError(
                f"{path} is larger than {limit_name or 'the limit'} ({max_bytes:,} bytes)",
                fix=f"shorten the file or raise {limit_name} in agents.yaml" if limit_name else "shorten the file",
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist", fix="check the path") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            f"cannot read {path}: {error.__class__.__name__}", fix="check the file's permissions and encoding"
        ) from None
    try:
        loader = _BoundedLoader if allow_aliases else _NoAliasLoader  # both are safe loaders
        data = yaml.load(text, Loader=loader)  # noqa: S506
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "invalid YAML"
        fix = f"nest it at most {MAX_NESTING} levels deep" if "nested more than" in problem else "fix the YAML syntax"
        raise ConfigError(f"{path}: malformed YAML{where}: {problem}", fix=fix) from None
    try:
        return valid_tree(data)
    except TooDeep as error:  # aliases that refer to themselves
        raise ConfigError(f"{path}: the YAML is {error}", fix=f"nest it at most {MAX_NESTING} levels deep") from None
