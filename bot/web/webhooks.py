"""``POST /webhooks/github``: verify -> parse -> route -> record -> enqueue -> 202.

Nothing slow happens here (no GitHub API call, no git, no model): GitHub expects an answer within
10 seconds and retries nothing by itself, so the handler only does what makes the delivery safe
to acknowledge, and leaves everything else to the worker.

Answers (small JSON: ``{"status": ..., "jobs": N, "reason": ...}``):

* 202 ``queued``: recorded and enqueued. 202 ``ignored``: a valid delivery we do not act on
  (an event or action we do not route, e.g. ``issues.opened``, a fork's workflow run, a comment
  without a command). That is normal GitHub traffic, acknowledged and recorded with the reason.
* 200 ``duplicate``: this ``X-GitHub-Delivery`` was already recorded (a redelivery): nothing done.
* 4xx, nothing recorded or enqueued: 413 body over 25 MB; 401 bad, missing or SHA-1-only
  signature; 400 missing event/delivery headers, JSON that is truncated or not an object, or a
  routed ``event.action`` whose payload lacks a field its handler needs (or has it with the wrong
  type; the reason names the field). Only those fields are read (:mod:`bot.handlers.views`):
  every other field may be missing, extra or of any shape, as github.com, GHE.com and each GitHub
  Enterprise Server release send them; 415 a form-encoded body (configure ``application/json``).
* 202 ``recorded``: recorded with its jobs, but the broker did not take them (down, or slower
  than the answer may wait): the relay enqueues them later (:mod:`bot.web.relay`).
* 408 the body did not arrive within ``ARCS_WEBHOOK_READ_TIMEOUT_S``; 400 also for JSON nested
  deeper than :data:`MAX_JSON_DEPTH`; 503 (nothing read further) when this process already holds
  ``ARCS_WEBHOOK_BODY_BUDGET_MB`` of bodies not yet verified.
* 503: the webhook secret is not configured (never accept unsigned deliveries), or the database
  is down or did not answer in time (then the delivery is not recorded later by this request's
  writer, or, when its statement was already sent and lands late, left to the relay: it is never
  enqueued twice). Every answer comes within :data:`ANSWER_DEADLINE_S` once the
  body is read: the database and broker calls are bounded by their timeouts, and by this deadline.

Never losing an acknowledged delivery: the delivery is written *with its jobs* in one statement
(status ``received``, the outbox), then the jobs are enqueued and the relay marks the row
``enqueued`` off the request path. A row the broker never confirmed (the process was killed in
between, the broker failed or stalled) is enqueued again by the relay after the grace, or by
GitHub's redelivery; the jobs' idempotency keys make the worker run each attempt once even when a
message ends up enqueued twice. A 503 means nothing was recorded, or (a timeout) that the record
may have been made: then the relay finishes it and a redelivery answers ``duplicate``.

The time from the request's arrival to the answer is stored on the delivery (``latency_ms``, for
``/metrics``) in the same writes: provisionally in the record, finally with the mark.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from bot.handlers.views import PayloadInvalid
from bot.routing import Decision, RouteContext, Router
from bot.settings import Settings
from bot.store.models import DELIVERY_ID_MAX
from bot.web.intake import Intake
from bot.web.ports import DeliveryRow, DeliveryStatus, DeliveryStore, Enqueuer
from bot.web.relay import Relay

log = structlog.get_logger("arcs.webhooks")

MAX_BODY_BYTES = 25 * 1024 * 1024
"""GitHub caps webhook payloads at 25 MB; anything larger is not from GitHub."""

_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")
_DELIVERY_ID = re.compile(rf"[A-Za-z0-9._:-]{{1,{DELIVERY_ID_MAX}}}")  # the column's limit, too
MAX_JSON_DEPTH = 64
"""Deeper JSON is refused (400): GitHub's payloads nest about 8 levels."""
ANSWER_DEADLINE_S = 4.5
"""Once the body is read, the answer comes within this (GitHub gives up at 10 s; we aim for 5)."""
_EVENT = re.compile(r"[a-z0-9_]{1,64}")  # digits too: projects_v2_item


class WebhookRejected(Exception):
    """A delivery refused with an HTTP status and a one-line reason."""

    def __init__(self, status_code: int, reason: str) -> None:
        super().__init__(reason)
        self.status_code = status_code
        self.reason = reason


def signature_for(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub sends for ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify_signature(secret: str, body: bytes, headers: Mapping[str, str]) -> None:
    """Check ``X-Hub-Signature-256`` in constant time; raise :class:`WebhookRejected` (401).

    Only SHA-256 is accepted: a delivery signed with SHA-1 alone (``X-Hub-Signature``) is refused.
    """
    given = headers.get("x-hub-signature-256")
    if given is None:
        if headers.get("x-hub-signature") is not None:
            raise WebhookRejected(
                401, "SHA-1 signatures (X-Hub-Signature) are refused: send X-Hub-Signature-256"
            )
        raise WebhookRejected(401, "missing X-Hub-Signature-256 header")
    # Validate the shape first: compare_digest needs ASCII, and a malformed header is a clear error.
    given = given.strip().lower()
    if not _SIGNATURE.fullmatch(given):
        raise WebhookRejected(401, "malformed X-Hub-Signature-256 (expected sha256=<64 hex digits>)")
    if not hmac.compare_digest(signature_for(secret, body).encode(), given.encode()):
        raise WebhookRejected(401, "signature does not match the webhook secret")


class BodyBudget:
    """Bytes of webhook bodies not yet verified that this process holds at once.

    Used from the event loop only (no lock): :func:`read_body` takes each chunk's size as it
    arrives and gives everything back on failure; the caller gives the body's size back once the
    signature is checked.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes; ``False`` (nothing reserved) when that would exceed the budget."""
        if self.used + size > self.capacity:
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        """Release ``size`` bytes."""
        self.used = max(0, self.used - size)


async def read_body(
    request: Request,
    limit: int | None = None,
    *,
    timeout_s: float | None = None,
    budget: BodyBudget | None = None,
) -> bytes:
    """Read the raw body, refusing (413) more than ``limit`` bytes (default 25 MB) early.

    ``timeout_s``: the whole body must arrive within it (408), so a client trickling bytes cannot
    hold a request open. ``budget``: every chunk is reserved in it as it arrives (503 when full;
    all of it released on any failure); on success the caller releases ``len(body)``.
    """
    limit = MAX_BODY_BYTES if limit is None else limit
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise WebhookRejected(400, "invalid Content-Length")
        if int(declared) > limit:
            raise WebhookRejected(413, f"payload larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                # The declared length can lie (or be absent with chunked encoding): cap while reading.
                if size > limit:
                    raise WebhookRejected(413, f"payload larger than {limit} bytes")
                if budget is not None and not budget.take(len(chunk)):
                    size -= len(chunk)
                    raise WebhookRejected(503, "too many webhook bodies in flight; try again later")
                chunks.append(chunk)
    except TimeoutError as exc:
        if budget is not None:
            budget.give(size)
        raise WebhookRejected(408, f"the body did not arrive within {timeout_s:g} s") from exc
    except ClientDisconnect as exc:
        if budget is not None:
            budget.give(size)
        raise WebhookRejected(400, "client disconnected before sending the whole body") from exc
    except BaseException:
        if budget is not None:
            budget.give(size)
        raise
    return b"".join(chunks)


def _too_deep(data: Any, limit: int) -> bool:
    """Whether ``data`` nests containers deeper than ``limit`` (level by level: no recursion)."""
    level: list[Any] = [data]
    depth = 1
    while level:
        if depth > limit:
            return True
        below: list[Any] = []
        for node in level:
            for child in node.values() if type(node) is dict else node:
                if type(child) in _CONTAINERS:  # exact types: json.loads makes no subclasses
                    below.append(child)
        level = below
        depth += 1
    return False


_CONTAINERS = (dict, list)


def load_json(body: bytes) -> dict[str, Any]:
    """The payload as a JSON object; 400 for malformed JSON, another top-level value, or nesting
    deeper than :data:`MAX_JSON_DEPTH` (checked without recursion; Python's own parser raises
    ``RecursionError`` on very deep input, which is a 400 too)."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WebhookRejected(400, f"malformed JSON: {exc}") from exc
    except RecursionError as exc:
        raise WebhookRejected(400, f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from exc
    if not isinstance(data, dict):
        raise WebhookRejected(400, "the payload is not a JSON object")
    # Counting brackets is C-fast and bounds the depth: most payloads skip the walk.
    if body.count(b"{") + body.count(b"[") > MAX_JSON_DEPTH and _too_deep(data, MAX_JSON_DEPTH):
        raise WebhookRejected(400, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return data


MAX_ID = 2**63 - 1
"""GitHub's ids fit a 64-bit signed column; a larger one is no GitHub id (and would fail the
whole group-committed batch of deliveries on PostgreSQL)."""


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _installation_id(installation: Any) -> int | None:
    """``installation.id`` when given; 400 when it is no 64-bit id."""
    value = _int_or_none(installation.get("id")) if isinstance(installation, dict) else None
    if value is not None and not 1 <= value <= MAX_ID:
        raise WebhookRejected(400, "installation.id is out of range")
    return value


@dataclass(frozen=True, slots=True)
class Delivery:
    """What the headers and the raw JSON say about a verified delivery."""

    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repo: str | None
    payload_sha256: str


def _describe(headers: Mapping[str, str], body: bytes, data: dict[str, Any]) -> Delivery:
    delivery_id = (headers.get("x-github-delivery") or "").strip()
    event = (headers.get("x-github-event") or "").strip()
    if not _DELIVERY_ID.fullmatch(delivery_id):
        raise WebhookRejected(400, "missing or malformed X-GitHub-Delivery header")
    if not _EVENT.fullmatch(event):
        raise WebhookRejected(400, "missing or malformed X-GitHub-Event header")
    action = data.get("action")
    installation = data.get("installation")
    repository = data.get("repository")
    repo = repository.get("full_name") if isinstance(repository, dict) else None
    return Delivery(
        delivery_id=delivery_id,
        event=event,
        action=action if isinstance(action, str) else None,
        installation_id=_installation_id(installation),
        repo=repo if isinstance(repo, str) else None,
        payload_sha256=hashlib.sha256(body).hexdigest(),
    )


def _answer(status_code: int, status: str, *, jobs: int = 0, reason: str | None = None) -> JSONResponse:
    return JSONResponse({"status": status, "jobs": jobs, "reason": reason}, status_code=status_code)


class WebhookEndpoint:
    """The ASGI endpoint; holds the injected ports, the composed router and the relay."""

    def __init__(
        self,
        settings: Settings,
        store: DeliveryStore,
        enqueuer: Enqueuer,
        router: Router,
        *,
        relay: Relay | None = None,
        intake: Intake | None = None,
        budget: BodyBudget | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.enqueuer = enqueuer
        self.router = router
        self.relay = relay if relay is not None else Relay(store, enqueuer)
        self.intake = intake if intake is not None else Intake(store, enqueuer, self.relay)
        self.budget = budget
        self._routed_events = router.events()

    async def handle(self, request: Request) -> JSONResponse:
        """Handle one delivery (see the module docstring for the answers)."""
        started = time.perf_counter()
        try:
            return await self._handle(request, started)
        except WebhookRejected as exc:
            log.warning("webhook_rejected", status=exc.status_code, reason=exc.reason)
            return _answer(exc.status_code, "rejected", reason=exc.reason)

    async def _read_verified(self, request: Request, secret: str) -> bytes:
        """The body, read within the read timeout and the body budget, with a valid signature."""
        body = await read_body(request, timeout_s=self.settings.webhook_read_timeout_s, budget=self.budget)
        try:
            verify_signature(secret, body, request.headers)
        finally:
            if self.budget is not None:
                self.budget.give(len(body))  # verified or refused: no longer an unsigned upload
        return body

    async def _handle(self, request: Request, started: float) -> JSONResponse:
        """The answer (rejections raise :class:`WebhookRejected`)."""
        secret = self.settings.webhook_secret
        if secret is None or not secret.get_secret_value():
            raise WebhookRejected(503, "webhook secret not configured")
        body = await self._read_verified(request, secret.get_secret_value())

        content_type = request.headers.get("content-type", "")
        if content_type.startswith("application/x-www-form-urlencoded"):
            raise WebhookRejected(415, "form-encoded payloads are not supported: use application/json")
        data = load_json(body)

        delivery = _describe(request.headers, body, data)
        bound = log.bind(
            delivery_id=delivery.delivery_id,
            event=delivery.event,
            action=delivery.action,
            installation_id=delivery.installation_id,
            repo=delivery.repo,
        )
        decision = self._decide(delivery, data)
        return await self._record_and_enqueue(delivery, decision, bound, started)

    def _decide(self, delivery: Delivery, data: dict[str, Any]) -> Decision:
        if delivery.event not in self._routed_events:
            # Not subscribed to / not routed: acknowledge without reading the payload.
            return Decision(reason=f"event {delivery.event} is not handled")
        ctx = RouteContext(
            settings=self.settings,
            delivery_id=delivery.delivery_id,
            event=delivery.event,
            installation_id=delivery.installation_id,
            repo_full_name=delivery.repo,
        )
        try:
            return self.router.route(delivery.event, delivery.action, data, ctx)
        except PayloadInvalid as exc:
            what = f"{delivery.event}.{delivery.action}" if delivery.action else delivery.event
            raise WebhookRejected(400, f"{what} payload: {exc}") from exc

    async def _record_and_enqueue(
        self, delivery: Delivery, decision: Decision, bound: Any, started: float
    ) -> JSONResponse:
        """Record the delivery with its jobs (one write, group-committed with its neighbours),
        have them enqueued (:mod:`bot.web.intake`), and answer within :data:`ANSWER_DEADLINE_S`.

        What the writer still does after the deadline gave up on it is safe: a late record is
        finished by the relay, a late enqueue confirms itself.
        """
        jobs = [job.to_json() for job in decision.jobs]
        status: DeliveryStatus = "received" if jobs else "ignored"
        row = DeliveryRow(
            delivery.delivery_id,
            delivery.event,
            delivery.action,
            delivery.installation_id,
            delivery.repo,
            delivery.payload_sha256,
            status,
            decision.reason,
            jobs or None,
            _ms_since(started),
        )
        try:
            submission = await self.intake.submit(row, decision.jobs, started=started)
            await asyncio.wait_for(asyncio.shield(submission.future), timeout=_left(started))
        except TimeoutError:
            if not submission.recorded:
                # Said "not recorded": the writer must not record it now, nor enqueue it if its
                # statement still lands (bot.web.intake: left to one later claim, never two).
                submission.abandoned = True
                bound.error("webhook_store_timeout")
                return _answer(503, "unavailable", reason="database did not answer in time")
            submission.broker_error = submission.broker_error or TimeoutError("the broker is slow")
        except Exception as exc:
            bound.error("webhook_store_unavailable", error=repr(exc))
            return _answer(503, "unavailable", reason="database unavailable")
        if not submission.fresh:
            bound.info("webhook_duplicate")
            return _answer(200, "duplicate", reason="delivery already recorded")
        if not jobs:
            bound.info("webhook_ignored", reason=decision.reason)
            return _answer(202, "ignored", reason=decision.reason)
        if submission.fresh_but_left:  # the database was slow: the relay enqueues it, once
            bound.warning("webhook_recorded_late")
            return _answer(
                202,
                "recorded",
                jobs=len(jobs),
                reason="database slow: the jobs are recorded and the relay will enqueue them",
            )
        if not submission.enqueued:  # down, or slower than the deadline: the relay takes over
            bound.error("webhook_broker_unavailable", error=repr(submission.broker_error))
            return _answer(
                202,
                "recorded",
                jobs=len(jobs),
                reason="broker unavailable: the jobs are recorded and will be enqueued when it is back",
            )
        bound.info("webhook_queued", jobs=[job.actor for job in decision.jobs])
        return _answer(202, "queued", jobs=len(jobs))


def _left(started: float) -> float:
    """What remains of :data:`ANSWER_DEADLINE_S` for a request that started at ``started``."""
    return max(0.1, ANSWER_DEADLINE_S - (time.perf_counter() - started))


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
