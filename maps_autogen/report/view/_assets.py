"""The viewer's style sheet and script (files under static/, shipped as package data) and the
Content-Security-Policy of each kind of page, which allows exactly those two by their SHA-256."""

from __future__ import annotations

import base64
import hashlib
from enum import Enum
from importlib.resources import files

_STATIC = files("maps_autogen.report.view").joinpath("static")

CSS = _STATIC.joinpath("view.css").read_text(encoding="utf-8")
# The pages' only script. It carries no data (that lives in escaped data-* attributes), so its
# hash is a constant; without it a page still reads, just without filters and live updates.
SCRIPT = _STATIC.joinpath("view.js").read_text(encoding="utf-8")


def csp_hash(source: str) -> str:
    """The CSP source expression allowing exactly this inline style or script."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


class PageMode(Enum):
    """Where a page lives, which decides how it refers to images and whether it updates live."""

    SINGLE_FILE = "single-file"  # one self-contained file: images as data: URLs
    EXPORT = "export"  # a folder of pages: images as files beside them, relative links
    SERVED = "served"  # pages from `maps view --serve`: images from the server, live updates


def content_security_policy(mode: PageMode) -> str:
    """Nothing loads from anywhere but the page's own origin: images as data: URLs (one file) or
    from the same folder/server, the one style sheet and the one script only by hash (which also
    forbids inline event handlers and javascript: URLs), no forms, no <base>. Only served pages
    may fetch (the live feed, from the same server)."""
    parts = [
        "default-src 'none'",
        "img-src data:" if mode is PageMode.SINGLE_FILE else "img-src 'self'",
        f"style-src {csp_hash(CSS)}",
        f"script-src {csp_hash(SCRIPT)}",
    ]
    if mode is PageMode.SERVED:
        parts.append("connect-src 'self'")
    parts += ["base-uri 'none'", "form-action 'none'"]
    return "; ".join(parts)
