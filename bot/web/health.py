"""``/healthz`` (the process answers) and ``/readyz`` (the database and the broker answer)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from bot.web.ports import DeliveryStore, Enqueuer

log = structlog.get_logger("arcs.health")

PING_TIMEOUT_S = 5.0
"""A probe that hangs longer than this counts as down (a hung probe would hang the kubelet too)."""


async def healthz(request: Request) -> JSONResponse:
    """Liveness: no dependency is checked, so a database outage never restarts the pods."""
    return JSONResponse({"status": "ok"})


async def _check(name: str, ping: Callable[[], None]) -> str:
    try:
        await asyncio.wait_for(run_in_threadpool(ping), timeout=PING_TIMEOUT_S)
    except TimeoutError:
        log.warning("readiness_timeout", dependency=name)
        return "timeout"
    except Exception as exc:
        log.warning("readiness_failed", dependency=name, error=repr(exc))
        return f"error: {type(exc).__name__}"
    return "ok"


class Readiness:
    """Readiness: 200 when both ports answer their ``ping``, 503 with per-dependency detail."""

    def __init__(self, store: DeliveryStore, enqueuer: Enqueuer) -> None:
        self.store = store
        self.enqueuer = enqueuer

    async def handle(self, request: Request) -> JSONResponse:
        """Ping the database and the broker concurrently."""
        database, broker = await asyncio.gather(
            _check("database", self.store.ping), _check("broker", self.enqueuer.ping)
        )
        ready = database == "ok" and broker == "ok"
        return JSONResponse(
            {"status": "ok" if ready else "unavailable", "checks": {"database": database, "broker": broker}},
            status_code=200 if ready else 503,
        )
