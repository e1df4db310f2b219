"""ASGI entry points for servers: ``bot.web.asgi:create()`` (a factory) and ``bot.web.asgi:app``.

Nothing happens at import. gunicorn (``deploy/gunicorn.conf.py``) loads ``bot.web.asgi:create()``
in each worker after the fork, so settings are read once per process and database/broker
connections are never shared across a fork. ``app`` is for servers that want an attribute
(``uvicorn bot.web.asgi:app``): it builds the real app on its first call.
"""

from __future__ import annotations

import threading

from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send


def create() -> Starlette:
    """Read settings from the environment, configure logging and build the app (the dashboard's
    session key: ``ARCS_SESSION_SECRET``, else the one shared under ``ARCS_HOME``)."""
    from bot.logging import configure_logging
    from bot.settings import load_settings
    from bot.web.app import create_app
    from bot.web.session_key import with_session_secret

    settings = load_settings()
    configure_logging(settings)
    # Every worker reads (or atomically creates) the same key under ARCS_HOME.
    return create_app(with_session_secret(settings))


class _LazyApp:
    """An ASGI app that builds the real one on first use (thread-safe, once)."""

    def __init__(self) -> None:
        self._app: Starlette | None = None
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            with self._lock:
                if self._app is None:
                    self._app = create()
        await self._app(scope, receive, send)


app = _LazyApp()
