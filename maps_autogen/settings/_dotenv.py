"""`.env` in the working folder (the `maps` command's; the Python API leaves it to the caller):
read for keys and endpoints only, and said so.

A `.env` sits where the user is not looking: in a folder they `cd` into, in a repository they
cloned. It may give what a run needs to reach its service (an API key, `OPENAI_BASE_URL`, an AG2
config list) and nothing else: never a `MAPS_*` setting (which could lift a safety switch such as
`--allow-outside-paths`, or change a run quietly), nor any other variable. A variable already in
the environment is never replaced. Which variables a `.env` gave, and where the run used them
(the key, the server), is said in the run's announcement (_endpoints.py); the `MAPS_*` ones it
holds are named as ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, MutableMapping
from pathlib import Path

from maps_autogen._util import WELL_KNOWN_KEY_VARIABLES

ENV_FILE = ".env"
#: A larger `.env` is not read (it is no list of keys).
MAX_BYTES = 1 << 20
#: The variables naming an OpenAI-compatible server: the OpenAI SDK's, and the older one that
#: VLMEvalKit and lmms-eval users keep in their .env. Both are honoured; differing values are an error.
BASE_URL_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
#: The variable AG2 reads its config list from (`--config-list OAI_CONFIG_LIST`).
CONFIG_LIST_VARIABLE = "OAI_CONFIG_LIST"
#: Where the `maps` command's settings come from in the environment: never from a `.env`.
SETTINGS_PREFIX = "MAPS_"

_held: dict[str, str] = {}  # what the file holds (values are never shown)
_path: Path | None = None
_applied: set[str] = set()  # the variables set from it


def is_key_or_endpoint(name: str) -> bool:
    """Whether a variable's name says it holds a key or names a service: the well-known key
    variables, every `*_API_KEY`, the base URL variables and AG2's config list."""
    upper = name.upper()
    return (name in WELL_KNOWN_KEY_VARIABLES or upper.endswith("_API_KEY") or name in BASE_URL_VARIABLES
            or name == CONFIG_LIST_VARIABLE)


def load_dotenv(folder: Path, *, named: Iterable[str] = (), env: MutableMapping[str, str] | None = None) -> list[str]:
    """Read `folder/.env` and set, where the environment has none, the variables that hold keys
    and name services (`is_key_or_endpoint`, and `named`: the configured endpoints' key
    variables); the notes to print (the settings it holds, ignored). The rest of the file is
    kept for `apply_dotenv` (a config read later may name another key variable)."""
    global _path
    from dotenv import dotenv_values

    _held.clear()
    _applied.clear()
    path = folder / ENV_FILE
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return [f"{path} is larger than {MAX_BYTES:,} bytes: not read"] if path.is_file() else []
        values = dotenv_values(path, interpolate=False)
    except (OSError, UnicodeDecodeError, ValueError):
        return [f"{path} cannot be read: not used"]
    _path = path
    _held.update({name: value for name, value in values.items() if value is not None})
    apply_dotenv([name for name in _held if is_key_or_endpoint(name)] + list(named), env)
    ignored = sorted(name for name in _held if name.upper().startswith(SETTINGS_PREFIX))
    if not ignored:
        return []
    return [f"{path} sets {', '.join(ignored)}: ignored (a .env gives keys and endpoints only; export the variable or "
            "pass the option on the command line)"]


def apply_dotenv(names: Iterable[str | None], env: MutableMapping[str, str] | None = None) -> None:
    """Set each of `names` the loaded `.env` holds (a key variable a config names, a config
    list's variable) where the environment has none; never a `MAPS_*` setting."""
    target = os.environ if env is None else env
    for name in names:
        if name and name in _held and not name.upper().startswith(SETTINGS_PREFIX) and not target.get(name):
            target[name] = _held[name]
            _applied.add(name)


def from_dotenv(names: Iterable[str], env: Mapping[str, str] | None = None) -> list[str]:
    """Which of `names` hold the value the `.env` gave (in order, once each)."""
    env = os.environ if env is None else env
    return [name for name in dict.fromkeys(names) if name in _applied and env.get(name) == _held.get(name)]


def dotenv_path() -> Path | None:
    """The `.env` read, if any."""
    return _path if _held else None


def forget_dotenv() -> None:
    """Forget the `.env` read (a new command in the same process)."""
    global _path
    _held.clear()
    _applied.clear()
    _path = None


__all__ = ["BASE_URL_VARIABLES", "CONFIG_LIST_VARIABLE", "ENV_FILE", "MAX_BYTES", "SETTINGS_PREFIX", "apply_dotenv",
           "dotenv_path", "forget_dotenv", "from_dotenv", "is_key_or_endpoint", "load_dotenv"]
