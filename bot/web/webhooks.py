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
  signature; 400 missing event/delivery headers, JSON that is truncated or not an object, or an
  event/action of a routed event that githubkit cannot validate (an unknown action, a payload
  that does not match GitHub's schema); 415 a form-encoded body (configure ``application/json``).
* 503: the webhook secret is not configured (never accept unsigned deliveries), or the database
  or the broker is down. Nothing is left half-done: when enqueueing fails after the delivery was
  recorded, the record is marked ``failed`` so GitHub's "Redeliver" is processed again. When a
  delivery has several jobs and the broker fails midway, the redelivery enqueues all of them
  again; their idempotency keys make the worker run each attempt once.

The time from the request's arrival to the answer is stored on the delivery this request recorded
(``latency_ms``, for ``/metrics``), after the answer is sent and best effort: a failure there is
logged and never changes the answer.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel, ValidationError
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from bot.routing import Decision, RouteContext, Router
from bot.settings import Settings
from bot.web.ports import DeliveryStatus, DeliveryStore, Enqueuer

log = structlog.get_logger("arcs.webhooks")

MAX_BODY_BYTES = 25 * 1024 * 1024
"""GitHub caps webhook payloads at 25 MB; anything larger is not from GitHub."""

_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")
_DELIVERY_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_EVENT = re.compile(r"[a-z_]{1,64}")


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


async def read_body(request: Request, limit: int | None = None) -> bytes:
    """Read the raw body, refusing (413) more than ``limit`` bytes (default 25 MB) early."""
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
        async for chunk in request.stream():
            size += len(chunk)
            # The declared length can lie (or be absent with chunked encoding): cap while reading.
            if size > limit:
                raise WebhookRejected(413, f"payload larger than {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect as exc:
        raise WebhookRejected(400, "client disconnected before sending the whole body") from exc
    return b"".join(chunks)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def event_model(event: str, action: str | None) -> type[BaseModel] | None:
    """githubkit's model for one ``event.action`` (``None`` when githubkit has no such pair).

    The model of the single action is used rather than githubkit's union of every action of
    the event: importing a union (``pull_request`` has ~30 actions) takes seconds on first use,
    one action's model a fraction of that. The names follow githubkit's codegen
    (``WebhookPullRequestClosed``, ``WebhookPush``); tests pin them against ``action_types``.
    """
    from githubkit_schemas.latest import models

    name = "Webhook" + _camel(event) + (_camel(action) if action else "")
    found = getattr(models, name, None)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def parse_event(event: str, action: str | None, data: dict[str, Any]) -> Any:
    """Validate ``data`` as githubkit's model of ``event.action``; 400 when that fails."""
    model = event_model(event, action)
    if model is None:
        what = f"{event} action {action!r}" if action else f"{event} payload without an action"
        raise WebhookRejected(400, f"unknown {what}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        where = ", ".join(".".join(str(p) for p in err["loc"]) for err in errors[:3])
        more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
        raise WebhookRejected(400, f"{event} payload does not validate: {where}{more}") from exc


def warm_up(router: Router) -> int:
    """Import the models of every routed ``event.action`` (so the first delivery is not slow)."""
    count = 0
    for event, action in router.routes():
        if event_model(event, action) is not None:
            count += 1
    return count


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
        installation_id=_int_or_none(installation.get("id")) if isinstance(installation, dict) else None,
        repo=repo if isinstance(repo, str) else None,
        payload_sha256=hashlib.sha256(body).hexdigest(),
    )


def _answer(status_code: int, status: str, *, jobs: int = 0, reason: str | None = None) -> JSONResponse:
    return JSONResponse({"status": status, "jobs": jobs, "reason": reason}, status_code=status_code)


class WebhookEndpoint:
    """The ASGI endpoint; holds the injected ports and the composed router."""

    def __init__(self, settings: Settings, store: DeliveryStore, enqueuer: Enqueuer, router: Router) -> None:
        self.settings = settings
        self.store = store
        self.enqueuer = enqueuer
        self.router = router
        self._routed_events = router.events()

    async def handle(self, request: Request) -> JSONResponse:
        """Handle one delivery (see the module docstring for the answers)."""
        started = time.perf_counter()
        try:
            response, recorded = await self._handle(request)
        except WebhookRejected as exc:
            log.warning("webhook_rejected", status=exc.status_code, reason=exc.reason)
            return _answer(exc.status_code, "rejected", reason=exc.reason)
        if recorded is not None:
            latency_ms = (time.perf_counter() - started) * 1000.0
            # After the answer is sent: GitHub's 10 s budget is not spent on bookkeeping.
            response.background = BackgroundTask(self._save_latency, recorded, latency_ms)
        return response

    def _save_latency(self, delivery_id: str, latency_ms: float) -> None:
        try:
            self.store.set_delivery_latency(delivery_id, latency_ms)
        except Exception as exc:  # a metric is not worth failing (or retrying) a delivery for
            log.warning("webhook_latency_not_saved", delivery_id=delivery_id, error=repr(exc))

    async def _handle(self, request: Request) -> tuple[JSONResponse, str | None]:
        """The answer and the id of the delivery this request recorded (``None``: none)."""
        secret = self.settings.webhook_secret
        if secret is None or not secret.get_secret_value():
            raise WebhookRejected(503, "webhook secret not configured")
        body = await read_body(request)
        verify_signature(secret.get_secret_value(), body, request.headers)

        content_type = request.headers.get("content-type", "")
        if content_type.startswith("application/x-www-form-urlencoded"):
            raise WebhookRejected(415, "form-encoded payloads are not supported: use application/json")
        try:
            data = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise WebhookRejected(400, f"malformed JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise WebhookRejected(400, "the payload is not a JSON object")

        delivery = _describe(request.headers, body, data)
        bound = log.bind(
            delivery_id=delivery.delivery_id,
            event=delivery.event,
            action=delivery.action,
            installation_id=delivery.installation_id,
            repo=delivery.repo,
        )
        decision = self._decide(delivery, data)
        return await self._record_and_enqueue(delivery, decision, bound)

    def _decide(self, delivery: Delivery, data: dict[str, Any]) -> Decision:
        if delivery.event not in self._routed_events:
            # Not subscribed to / not routed: acknowledge without validating the whole payload.
            return Decision(reason=f"event {delivery.event} is not handled")
        model = parse_event(delivery.event, delivery.action, data)
        ctx = RouteContext(
            settings=self.settings,
            delivery_id=delivery.delivery_id,
            event=delivery.event,
            installation_id=delivery.installation_id,
            repo_full_name=delivery.repo,
        )
        return self.router.route(delivery.event, delivery.action, model, ctx)

    async def _record_and_enqueue(
        self, delivery: Delivery, decision: Decision, bound: Any
    ) -> tuple[JSONResponse, str | None]:
        status: DeliveryStatus = "queued" if decision.jobs else "ignored"
        try:
            fresh = await run_in_threadpool(
                self.store.record_delivery,
                delivery.delivery_id,
                delivery.event,
                delivery.action,
                delivery.installation_id,
                delivery.repo,
                delivery.payload_sha256,
                status,
                decision.reason,
            )
        except Exception as exc:
            bound.error("webhook_store_unavailable", error=repr(exc))
            return _answer(503, "unavailable", reason="database unavailable"), None
        if not fresh:
            bound.info("webhook_duplicate")
            return _answer(200, "duplicate", reason="delivery already recorded"), None
        recorded = delivery.delivery_id
        if not decision.jobs:
            bound.info("webhook_ignored", reason=decision.reason)
            return _answer(202, "ignored", reason=decision.reason), recorded
        try:
            for job in decision.jobs:
                await run_in_threadpool(self.enqueuer.enqueue, job)
        except Exception as exc:
            bound.error("webhook_broker_unavailable", error=repr(exc))
            try:
                await run_in_threadpool(
                    self.store.mark_delivery, delivery.delivery_id, "failed", "broker unavailable"
                )
            except Exception as mark_exc:  # the database went away too: the redelivery decides
                bound.error("webhook_mark_failed", error=repr(mark_exc))
            return _answer(503, "unavailable", reason="broker unavailable"), recorded
        bound.info("webhook_queued", jobs=[job.actor for job in decision.jobs])
        return _answer(202, "queued", jobs=len(decision.jobs)), recorded
