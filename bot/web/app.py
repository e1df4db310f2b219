"""The Starlette application: webhooks, health probes, the manifest flow and the dashboard."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio.to_thread
import structlog
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route

from bot.handlers.registry import build_router
from bot.routing import Router
from bot.settings import Settings
from bot.web.headers import SecureStarlette, content_security_policy, script_hash
from bot.web.health import Readiness, healthz
from bot.web.intake import WRITERS, Intake
from bot.web.pg_intake import AsyncPgRecorder
from bot.web.ports import DeliveryStore, Enqueuer
from bot.web.redis_intake import AsyncRedisSender
from bot.web.relay import Relay
from bot.web.setup import AUTOSUBMIT_JS, ManifestFlow
from bot.web.webhooks import BodyBudget, WebhookEndpoint

if TYPE_CHECKING:
    from bot.dashboard.auth import HttpFactory

log = structlog.get_logger("arcs.web")

WARM_TIMEOUT_S = 10.0


def default_store(settings: Settings) -> DeliveryStore:
    """The SQL store (SQLite under ``ARCS_HOME`` unless ``ARCS_DATABASE_URL`` says otherwise).

    Opened lazily (the process starts, and answers 503, while the database is down; the schema is
    migrated when it answers) with every wait bounded by ``ARCS_DATABASE_TIMEOUT_S``.
    """
    from bot.store import open_store

    store: DeliveryStore = open_store(settings, lazy=True, timeout_s=settings.database_timeout_s)
    return store


def default_enqueuer(settings: Settings) -> Enqueuer:
    """The configured broker (the in-process stub broker when ``ARCS_BROKER_URL`` is unset), its
    connect and socket waits bounded by ``ARCS_BROKER_TIMEOUT_S``."""
    from jobs.broker import make_enqueuer

    enqueuer: Enqueuer = make_enqueuer(settings, timeout_s=settings.broker_timeout_s)
    return enqueuer


async def _warm(store: DeliveryStore) -> None:
    """Open (and migrate) the database before the first request, when it answers; never fails
    (the process serves 503 until the database is back)."""
    try:
        await asyncio.wait_for(anyio.to_thread.run_sync(store.ping, abandon_on_cancel=True), WARM_TIMEOUT_S)
    except Exception as exc:
        log.warning("database_unavailable_at_start", error=str(exc)[:300] or type(exc).__name__)


_frozen = False


def _freeze_startup_objects() -> None:
    """Move everything alive after start-up (modules, the ORM's and pydantic's metadata, the
    routes: ~120k objects) out of the garbage collector's reach, once per process.

    They are never garbage, yet every full collection walked them all: 20-150 ms pauses, which
    under load were the webhook answers' p99 and a fifth of the web process's CPU (bench/intake).
    """
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


def web_csp(settings: Settings) -> str:
    """The web process's Content-Security-Policy: the manifest flow's form goes to the GitHub web
    URL and submits itself with its one script (:mod:`bot.web.headers`)."""
    parts = urlsplit(settings.web_url)
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else ""
    return content_security_policy(
        form_targets=[origin] if origin else [], script_hashes=[script_hash(AUTOSUBMIT_JS)]
    )


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
    Every response carries the security headers (:mod:`bot.web.headers`).

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

    relay = Relay(store, enqueuer, interval_s=settings.relay_interval_s)
    intake = Intake(
        store,
        enqueuer,
        relay,
        writers=WRITERS,
        # PostgreSQL and Redis are awaited on the event loop; other ports run in a thread.
        recorder=AsyncPgRecorder.for_store(store, timeout_s=settings.database_timeout_s, size=WRITERS),
        sender=AsyncRedisSender.for_enqueuer(enqueuer),
        # The writer enqueues only within the first half of its claim on a recorded row.
        claim_s=settings.relay_grace_s / 2,
    )
    budget = BodyBudget(int(settings.webhook_body_budget_mb * 1024 * 1024))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await _warm(store)
        relay.start()
        _freeze_startup_objects()
        log.info(
            "web_started",
            public_url=settings.public_url,
            app_configured=settings.app_id is not None,
            routes=len(list(app_router.routes())),
        )
        yield
        await intake.aclose()
        await anyio.to_thread.run_sync(relay.stop)
        for resource in owned:
            _close(resource)

    webhooks = WebhookEndpoint(
        settings, store, enqueuer, app_router, relay=relay, intake=intake, budget=budget
    )
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
    app = SecureStarlette(routes=routes, middleware=middleware, lifespan=lifespan, csp=web_csp(settings))
    app.state.relay = relay
    app.state.intake = intake
    app.state.body_budget = budget
    return app
