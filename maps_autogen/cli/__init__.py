"""The `maps` command line: thin commands over the public Python API (`maps_autogen.api._api`), one
module per command, their options made from the declarations beside each command's layer
(`settings/_options.py` says how; `_shared.py`); the group and the entry point are `_main.py`'s."""

from ._main import ENV_PREFIX as ENV_PREFIX, cli as cli, main as main
