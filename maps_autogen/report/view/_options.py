"""`maps view`'s options (and `maps_autogen.write_view`'s and `serve_view`'s), declared once
(settings/_options.py says what is made from them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from maps_autogen.settings import Options, argument, option


@dataclass(frozen=True, kw_only=True)
class _RunFolder(Options):
    run: Path = argument("A run folder: a solve run or an eval run.", kind="path")


@dataclass(frozen=True, kw_only=True)
class ViewOptions(_RunFolder):
    """Where `maps view` writes a run's pages."""

    out: Path | None = option(
        None, "--out", "A .html file (one self-contained page) or a folder (index.html, a page per problem, images "
        "as files). Default: RUN/view.html for a solve run, the folder RUN/view/ for an eval run.", kind="path")


@dataclass(frozen=True, kw_only=True)
class ServeOptions(_RunFolder):
    """Where `maps view --serve` serves a run from."""

    port: int = option(0, "--port", "Port for --serve (0: any free port).", kind="whole", low=0, high=65535)
    host: str = option("127.0.0.1", "--host", "Address for --serve (the URL's token still guards it).", kind="text",
                       safety=True)
