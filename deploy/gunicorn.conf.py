"""gunicorn configuration for the ARCS web side (containers: ``gunicorn -c deploy/gunicorn.conf.py``).

The app is ``bot.web.asgi:create()``: a factory gunicorn calls in every worker after the fork,
which reads the ``ARCS_*`` settings once per process. Workers are uvicorn's, from the
``uvicorn-worker`` package (uvicorn's bundled ``uvicorn.workers`` module is deprecated).
``arcs serve`` applies the same values (``bot/cli/serve_cmd.py``); this file reads the usual
deployment variables: ``PORT`` (default 8000), ``WEB_CONCURRENCY`` (default 2) and
``FORWARDED_ALLOW_IPS`` (the proxies whose X-Forwarded-* headers are trusted, default none).
Before forking, the master makes the dashboard's session key under ``ARCS_HOME`` when
``ARCS_SESSION_SECRET`` is unset, so every worker signs sessions with the same key.
"""

from __future__ import annotations

import os

from bot.cli.serve_cmd import APP_FACTORY, DEFAULT_WORKERS, GRACEFUL_TIMEOUT_S, WORKER_CLASS

wsgi_app = APP_FACTORY
worker_class = WORKER_CLASS
bind = [f"0.0.0.0:{int(os.environ.get('PORT', '8000'))}"]
workers = int(os.environ.get("WEB_CONCURRENCY", str(DEFAULT_WORKERS)))
# Build the app in each worker, never before the fork (no shared database or broker sockets).
preload_app = False
graceful_timeout = GRACEFUL_TIMEOUT_S
timeout = 60
keepalive = 5
accesslog = "-"
errorlog = "-"
proc_name = "arcs-web"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "")


def on_starting(server: object) -> None:
    """gunicorn hook, in the master before any worker: create the shared session key."""
    from bot.settings import load_settings
    from bot.web.session_key import with_session_secret

    with_session_secret(load_settings())
