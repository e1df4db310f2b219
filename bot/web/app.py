"""The Starlette application: webhooks, health probes, the manifest flow and the dashboard."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import structlog
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route

from bot.routing import Router, build_router
from bot.settings import Settings
from bot.web.health import Readiness, healthz
from bot.web.ports import DeliveryStore, Enqueuer
from bot.web.setup import ManifestFlow
from bot.web.webhooks import WebhookEndpoint, warm_up

if TYPE_CHECKING:
    from bot.dashboard.auth import HttpFactory

log = structlog.get_logger("arcs.web")


def default_store(settings: Settings) -> DeliveryStore:
    """The SQL store (SQLite under ``ARCS_HOME`` unless ``ARCS_DATABASE_URL`` says otherwise)."""
    from bot.store import open_store

    store: DeliveryStore = open_store(settings)
    return store


def default_enqueuer(settings: Settings) -> Enqueuer:
    """The configured broker (the in-process stub broker when ``ARCS_BROKER_URL`` is unset)."""
    from jobs.broker import make_enqueuer

    enqueuer: Enqueuer = make_enqueuer(settings)
    return enqueuer


def _close(resource: Any) -> None:
    close = getattr(resource, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # shutting down anyway; say what failed
            log.warning("close_failed", resource=type(resource).__name__, error=repr(exc))


def create_app(
    settings: Settings,
    *,
    store: DeliveryStore | None = None,
    enqueuer: Enqueuer | None = None,
    router: Router | None = None,
    manifest: dict[str, Any] | None = None,
    dashboard: bool = True,
    http: HttpFactory | None = None,
) -> Starlette:
    """Build the app. Ports left out are built from ``settings`` (and closed on shutdown).

    Routes: ``POST /webhooks/github``, ``GET /healthz``, ``GET /readyz``, ``GET /setup``,
    ``GET /setup/callback``; with ``dashboard`` (and a full :class:`bot.store.store.Store`, not
    only a delivery store such as the tests' in-memory one) also the dashboard's
    (:func:`bot.dashboard.app.dashboard_routes`: ``/login``, ``/logout``, ``/metrics``, the
    pages, ``/api/…``, ``/static``) with its session middleware. ``http`` makes the client a
    dashboard login uses to reach GitHub (tests).
    """
    owned: list[Any] = []
    if store is None:
        store = default_store(settings)
        owned.append(store)
    if enqueuer is None:
        enqueuer = default_enqueuer(settings)
        owned.append(enqueuer)

    app_router = router or build_router()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Before the first request: githubkit's models take a moment to import.
        models = await run_in_threadpool(warm_up, app_router)
        log.info(
            "web_started",
            public_url=settings.public_url,
            app_configured=settings.app_id is not None,
            models=models,
        )
        yield
        for resource in owned:
            _close(resource)

    webhooks = WebhookEndpoint(settings, store, enqueuer, app_router)
    routes: list[BaseRoute] = [
        Route("/webhooks/github", webhooks.handle, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", Readiness(store, enqueuer).handle, methods=["GET"]),
        *ManifestFlow(settings, manifest=manifest).routes(),
    ]
    middleware: list[Middleware] = []
    if dashboard:
        from bot.store.store import Store

        if isinstance(store, Store):
            from bot.dashboard.app import dashboard_middleware, dashboard_routes

            routes += dashboard_routes(settings, store, http=http, enqueuer=enqueuer)
            middleware = dashboard_middleware(settings, store)
        else:
            log.info("dashboard_not_mounted", reason="the store is not the SQL store")
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
