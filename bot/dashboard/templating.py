"""Jinja2 templates of the dashboard (autoescaped) and the folder of its static files.

``base.html`` needs only ``request``; it shows the nav when ``viewer`` (a
:class:`~bot.dashboard.viewer.Viewer` or None) is given, with a logout form POSTing to
``/logout`` with the ``csrf`` field, and links the owners in ``nav_owners`` when given. Pages
extend it and fill the ``content`` block (``title`` sets the ``<title>``). The stylesheet is
``/static/dashboard.css``: mount :data:`STATIC_DIR` at ``/static``.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from urllib.parse import quote, urlsplit

from starlette.templating import Jinja2Templates

from bot.dashboard.traceview import tool_totals
from bot.settings import Settings

TEMPLATES_DIR = Path(__file__).with_name("templates")
STATIC_DIR = Path(__file__).with_name("static")
"""Mount at ``/static`` (``Mount("/static", StaticFiles(directory=STATIC_DIR), name="static")``)."""

DASH = "–"


def pct(value: float | None) -> str:
    """0.583 -> ``58%``; None -> ``–``."""
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value * 100:.0f}%"


def money(value: float | None) -> str:
    """1.5 -> ``$1.50``; amounts under a cent keep 4 decimals; None -> ``–``."""
    if value is None or not math.isfinite(value):
        return DASH
    return f"${value:,.4f}" if 0 < abs(value) < 0.01 else f"${value:,.2f}"


def duration(seconds: float | None) -> str:
    """4800 -> ``1h 20m``; None -> ``–``."""
    if seconds is None or not math.isfinite(seconds):
        return DASH
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s" if s % 60 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def when(value: dt.datetime | None) -> str:
    """``2025-03-13 12:00 UTC``; None -> ``–``."""
    if value is None:
        return DASH
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def num(value: float | None) -> str:
    """12345 -> ``12,345``; None -> ``–``."""
    if value is None:
        return DASH
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def safe_url(url: str | None) -> str:
    """``url`` when it is an http(s) URL, else ``''`` (a ``javascript:`` link from the database is
    never rendered as a link)."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return url if parts.scheme in ("http", "https") and parts.netloc else ""


def path_segment(value: str) -> str:
    """``value`` quoted for one URL path segment (``/`` kept for ``owner/name``)."""
    return quote(value, safe="/")


def make_templates(settings: Settings, *, local: bool = False) -> Jinja2Templates:
    """The dashboard's templates: autoescape on, ``base.html`` with a ``content`` block
    (``local``: ``arcs dashboard``, the global ``local_mode``: no login, no policy form)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=pct,
        money=money,
        duration=duration,
        when=when,
        num=num,
        safe_url=safe_url,
        seg=path_segment,
        tool_totals=tool_totals,
    )
    env.globals["github_web_url"] = settings.web_url
    env.globals["local_mode"] = local
    return Jinja2Templates(env=env)


__all__ = [
    "STATIC_DIR",
    "TEMPLATES_DIR",
    "duration",
    "make_templates",
    "money",
    "num",
    "path_segment",
    "pct",
    "safe_url",
    "when",
]
