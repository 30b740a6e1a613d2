"""The embedded offline model: llama.cpp's OpenAI-compatible server in a child process.

_gguf.py reads model files, _launch.py turns settings into a checked launch plan, _server.py
runs and watches the child (parent side), _child.py is the child's entry point. This package
file imports none of them until a name is used, so the child does not pay for the parent's imports.
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._embedded import embedded_model_path as embedded_model_path
    from ._gguf import GGUFFormatError as GGUFFormatError, read_gguf_info as read_gguf_info
    from ._launch import LocalModelSettings as LocalModelSettings, settings_from_endpoint as settings_from_endpoint
    from ._options import ModelServerOptions as ModelServerOptions
    from ._server import LocalServer as LocalServer, shared_local_server as shared_local_server

__getattr__, __dir__ = lazy_exports(globals())
