"""`maps view`: read a solve or eval run in a browser, as one self-contained page, as a folder
of pages that scales to thousands of problems, or live from a small local server while the run
is still going (_server.py)."""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._assets import (CSS as CSS, SCRIPT as SCRIPT, PageMode as PageMode,
                          content_security_policy as content_security_policy)
    from ._options import ServeOptions as ServeOptions, ViewOptions as ViewOptions
    from ._pages import (export_view as export_view, render_view as render_view, write_pages as write_pages,
                         write_view as write_view)
    from ._render import kind_of as kind_of
    from ._server import ViewServer as ViewServer

__getattr__, __dir__ = lazy_exports(globals())
