"""The dashboard's routes and middleware, assembled for :func:`bot.web.app.create_app`.

Routes: ``/login``, ``/login/callback``, ``/logout`` (GET page, POST), ``/metrics``, the JSON API
(:func:`bot.dashboard.api.api_routes`), the pages (:func:`bot.dashboard.pages.page_routes`) and
``/static`` (route name ``static``). Middleware: the signed cookie session, then the viewer
(``request.state.viewer``). Nothing is built at import time.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from bot.settings import Settings

if TYPE_CHECKING:
    from bot.dashboard.auth import HttpFactory
    from bot.store.store import Store


def dashboard_routes(
    settings: Settings,
    store: Store,
    *,
    http: HttpFactory | None = None,
    enqueuer: object | None = None,
    clock: Callable[[], dt.datetime] | None = None,
) -> list[BaseRoute]:
    """Every dashboard route. ``http`` makes the client of one login (GitHub's OAuth and API;
    ``httpx.AsyncClient`` with the system's proxy settings when ``None``); ``enqueuer`` may tell ``/metrics`` its queue depth; ``clock`` dates
    new sessions and the pages' "now" (tests)."""
    from bot.dashboard.api import api_routes
    from bot.dashboard.auth import GitHubLogin
    from bot.dashboard.metrics import MetricsEndpoint, queue_depth_probe
    from bot.dashboard.pages import page_routes
    from bot.dashboard.templating import STATIC_DIR

    login = GitHubLogin(settings, store, http=http, clock=clock)
    metrics = MetricsEndpoint(settings, store, queue_depth=queue_depth_probe(enqueuer))
    dated = {"clock": clock} if clock is not None else {}
    return [
        *login.routes(),
        Route("/metrics", metrics.handle, methods=["GET"], name="metrics"),
        *api_routes(store, settings, **dated),
        *page_routes(store, settings, **dated),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]


def dashboard_middleware(
    settings: Settings, store: Store, *, session_secret: str | None = None
) -> list[Middleware]:
    """The session cookie and viewer middleware (``session_secret`` overrides
    ``ARCS_SESSION_SECRET``; unset, a random per-process key is used, with a warning)."""
    from bot.dashboard.auth import session_middleware

    return session_middleware(settings, store, secret=session_secret)
