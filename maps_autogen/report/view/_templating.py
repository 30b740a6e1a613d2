"""The viewer's Jinja environment: templates shipped as package data (templates/*.html),
escaping on by default, a missing variable an error, and the one redaction pass.

Every value a template prints goes through `_finalize` (redact: secrets masked), then through
autoescaping, so model text is always shown as text; markup is only what the templates
themselves write. Pages and the live feed's fragments (_server.py) render the same macros
(templates/macros.html), so a turn looks the same whether it was there when the page loaded or
arrived while it was open.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from maps_autogen._util import redact
from maps_autogen.report.view._assets import CSS, SCRIPT
from maps_autogen.report.view._prepare import cost, number, seconds


def _finalize(value: Any) -> Any:
    """The one redaction pass, on every printed value: text from the run (or anywhere) has its
    secrets masked before it is escaped. Markup is what a macro rendered (its parts passed here
    already) or the package's own style sheet and script."""
    if isinstance(value, Markup):
        return value
    return redact("" if value is None else str(value))


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The viewer's one template environment (built once)."""
    env = Environment(
        loader=PackageLoader("maps_autogen.report.view", "templates"),
        autoescape=select_autoescape(["html"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(number=number, cost=cost, seconds=seconds)
    # Trusted package files, printed as they are: the page's policy allows exactly these by hash.
    env.globals.update(css=Markup(CSS), script=Markup(SCRIPT))
    return env


def render(template: str, **context: Any) -> Markup:
    """A whole template rendered with `context` (markup: it may go into another template)."""
    return Markup(environment().get_template(template).render(**context))


def fragment(macro: str, *args: Any) -> str:
    """One macro of macros.html: a piece of a page, also sent alone by the live feed."""
    return str(getattr(environment().get_template("macros.html").module, macro)(*args))
