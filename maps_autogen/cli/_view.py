"""`maps view`: a run's pages written, or served live, through `api`'s write_view and serve_view."""

from __future__ import annotations

from typing import Any

import click

from maps_autogen.cli._shared import open_in_browser, options_of
from maps_autogen.report.view import ServeOptions, ViewOptions


@click.command()
@options_of(ViewOptions)
@click.option("--open", "open_page", is_flag=True, help="Open the page in the default browser.")
@click.option(
    "--serve",
    is_flag=True,
    help="Serve the run from a local web server, updating live while it runs (Ctrl-C stops it).",
)
@options_of(ServeOptions, inherited=False)
def view(open_page: bool, serve: bool, **declared: Any) -> None:
    """Read a solve run or an eval run in a browser: pages on disk, or live with --serve."""
    from maps_autogen.api import serve_view, write_view

    if serve:
        if declared["out"] is not None:
            raise click.UsageError("--serve writes no files; drop --out")
        server = serve_view(ServeOptions.from_cli(declared))
        click.echo(server.url)
        if open_page:
            open_in_browser(server.url)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            click.echo("stopped", err=True)
        finally:
            server.close()
        return
    page = write_view(ViewOptions.from_cli(declared))
    click.echo(str(page))
    if open_page:
        open_in_browser(page.resolve().as_uri())
