"""``arcs serve``: the web side (webhooks, probes, app setup) under gunicorn with uvicorn workers.

gunicorn runs in this process (its arbiter takes over until SIGTERM/SIGINT); each worker builds
its own app, database engine and broker connection after the fork. With nothing configured it
starts on a bare machine: SQLite under ``ARCS_HOME`` and the in-process broker.

Credentials written by the manifest flow (``$ARCS_HOME/secrets.env``) are read here, at the
edge, for variables the environment does not already set.

While no GitHub App is configured (no ``ARCS_APP_ID``, no ``secrets.env``), the manifest flow
(``/setup``) is locked by a one-time token: ``ARCS_SETUP_TOKEN`` if set, else a random one made
at each start. It goes to the workers (their settings, and ``ARCS_SETUP_TOKEN`` in the
environment they inherit) and the setup link is printed once on stderr.
"""

from __future__ import annotations

import argparse
import os
import secrets
from collections.abc import Callable, MutableMapping
from typing import Any

from pydantic import SecretStr

from bot.cli.context import Context, effective_settings
from bot.cli.context import read_secrets_file as read_secrets_file  # re-export: callers of serve_cmd
from bot.errors import ConfigError, UsageError
from bot.settings import Settings
from bot.web.session_key import with_session_secret

WORKER_CLASS = "uvicorn_worker.UvicornWorker"
"""uvicorn's own ``uvicorn.workers`` module is deprecated; the ``uvicorn-worker`` package replaces it."""
APP_FACTORY = "bot.web.asgi:create()"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_WORKERS = 2
GRACEFUL_TIMEOUT_S = 30
"""Webhook requests are short; a worker gets this long to finish in-flight ones on shutdown."""


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``serve``."""
    serve = sub.add_parser(
        "serve",
        parents=[common],
        help="run the web side: GitHub webhooks, /healthz, /readyz and the app setup flow",
        description="Serve the GitHub App's web side with gunicorn and uvicorn workers.",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"interface to bind (default {DEFAULT_HOST})")
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)"
    )
    serve.add_argument(
        "--workers", type=int, default=DEFAULT_WORKERS, help=f"worker processes (default {DEFAULT_WORKERS})"
    )
    serve.set_defaults(handler=run_serve)


def new_setup_token() -> str:
    """A random setup token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def with_setup_token(
    settings: Settings, *, make_token: Callable[[], str] = new_setup_token
) -> tuple[Settings, str | None]:
    """``settings`` with the token that unlocks ``/setup``, and the setup link to print.

    Only while no app is configured: then the token is ``ARCS_SETUP_TOKEN`` if set (at least
    ``MIN_SETUP_TOKEN_CHARS`` long, else :class:`ConfigError`), else a fresh ``make_token()``.
    Once configured: ``(settings, None)`` (the flow refuses anyway).
    """
    from bot.web.setup import MIN_SETUP_TOKEN_CHARS, is_configured, setup_token_of, setup_url

    if is_configured(settings):
        return settings, None
    token = setup_token_of(settings)
    if token is None:
        token = make_token()
        settings = settings.model_copy(update={"setup_token": SecretStr(token)})
    elif len(token) < MIN_SETUP_TOKEN_CHARS:
        raise ConfigError(f"ARCS_SETUP_TOKEN must be at least {MIN_SETUP_TOKEN_CHARS} characters")
    return settings, setup_url(settings, token)


def share_setup_token(settings: Settings, environ: MutableMapping[str, str]) -> None:
    """Put ``settings.setup_token`` in ``environ`` as ``ARCS_SETUP_TOKEN`` (for forked workers)."""
    if settings.setup_token is not None:
        environ["ARCS_SETUP_TOKEN"] = settings.setup_token.get_secret_value()


_LOOPBACK_OR_ANY = frozenset({"", "0.0.0.0", "::", "127.0.0.1", "localhost", "::1"})


def free_port(host: str) -> int:
    """A port the OS says is free on ``host`` now (``--port 0``: the links need the real one)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def with_listen_url(settings: Settings, host: str, port: int, *, explicit: bool) -> Settings:
    """``settings`` whose ``public_url`` is where this process listens, unless ``explicit``
    (``ARCS_PUBLIC_URL`` set, in the environment or ``secrets.env``): the setup link printed at
    start, the app manifest's URLs and the login callback then name ``--host``/``--port`` instead
    of the default ``http://localhost:8000``. A loopback or wildcard bind is named ``localhost``."""
    if explicit:
        return settings
    name = "localhost" if host in _LOOPBACK_OR_ANY else (f"[{host}]" if ":" in host else host)
    return settings.model_copy(update={"public_url": f"http://{name}:{port}"})


def gunicorn_options(host: str, port: int, workers: int) -> dict[str, Any]:
    """The gunicorn settings ``arcs serve`` uses (``deploy/gunicorn.conf.py`` mirrors them)."""
    if not 0 <= port <= 65535:
        raise UsageError(f"serve: --port must be 0-65535, got {port}")
    if workers < 1:
        raise UsageError(f"serve: --workers must be at least 1, got {workers}")
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return {
        "bind": [bind],
        "workers": workers,
        "worker_class": WORKER_CLASS,
        "graceful_timeout": GRACEFUL_TIMEOUT_S,
        "timeout": 60,
        "keepalive": 5,
        "accesslog": "-",
        "errorlog": "-",
        "proc_name": "arcs-web",
        # Fork before building the app: no database or broker connection crosses a fork.
        "preload_app": False,
    }


def run_serve(args: argparse.Namespace, ctx: Context) -> int:
    """Run gunicorn until it is stopped; the exit code is gunicorn's."""
    options = gunicorn_options(args.host, args.port, args.workers)
    port = args.port or free_port(args.host)
    options["bind"] = [f"[{args.host}]:{port}" if ":" in args.host else f"{args.host}:{port}"]
    effective = effective_settings(ctx.settings, os.environ)
    explicit = (
        "public_url" in ctx.settings.model_fields_set or effective.public_url != ctx.settings.public_url
    )
    settings, link = with_setup_token(with_listen_url(effective, args.host, port, explicit=explicit))
    # Before the fork: every worker signs dashboard sessions with this one key.
    settings = with_session_secret(settings)
    try:
        from gunicorn.app.base import BaseApplication  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise ConfigError("gunicorn is not installed (pip install 'arcs')") from exc

    class _Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            # Runs in each worker after the fork.
            from bot.logging import configure_logging
            from bot.web.app import create_app

            configure_logging(settings)
            return create_app(settings)

    ctx.out.info(f"arcs serve: http://{options['bind'][0]} ({args.workers} worker(s))")
    if link is not None:
        # The workers get the settings object after the fork; the environment is for anything
        # that re-reads settings from it (a re-executed gunicorn, bot.web.asgi).
        share_setup_token(settings, os.environ)
        ctx.out.info(f"arcs serve: no GitHub App is configured yet; create it at {link}")
    try:
        _Server().run()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
