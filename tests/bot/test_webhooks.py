"""POST /webhooks/github end to end (in process, fake store and queue) and the probes."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import structlog
from starlette.requests import Request
from starlette.testclient import TestClient

from bot.settings import Settings
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer, MemoryDeliveryStore
from bot.web.webhooks import MAX_BODY_BYTES, WebhookRejected, read_body
from tests.bot.webhook_support import (
    FIXTURES,
    encode,
    event_of,
    headers,
    load,
    sign,
    with_secret,
)


class Harness:
    """An app with in-memory ports and a client."""

    def __init__(self, settings: Settings) -> None:
        self.store = MemoryDeliveryStore()
        self.queue = ListEnqueuer()
        self.app = create_app(with_secret(settings), store=self.store, enqueuer=self.queue)
        self.client = TestClient(self.app)

    def post(
        self, stem_or_event: str, payload: dict[str, Any] | None = None, *, delivery: str = "delivery-1"
    ) -> Any:
        event = event_of(stem_or_event)
        body = encode(payload if payload is not None else load(stem_or_event))
        return self.client.post(
            "/webhooks/github", content=body, headers=headers(event, body, delivery=delivery)
        )

    def nothing_done(self) -> bool:
        return self.store.records == {} and self.queue.jobs == []


@pytest.fixture
def h(settings: Settings) -> Iterator[Harness]:
    harness = Harness(settings)
    with harness.client:
        yield harness


# --- every fixture, through HTTP -------------------------------------------------------------

EXPECTED: dict[str, tuple[str, list[str]]] = {
    "workflow_run.completed": ("ignored", []),
    "workflow_run.completed.failure": ("queued", ["repair_ci_failure"]),
    "check_suite.completed": ("ignored", []),
    "check_suite.completed.failure": ("queued", ["repair_ci_failure"]),
    "check_run.completed": ("ignored", []),
    "check_run.completed.failure": ("queued", ["repair_ci_failure"]),
    "issues.labeled": ("queued", ["repair_issue"]),
    "issues.opened": ("ignored", []),
    "issue_comment.created": ("ignored", []),
    "issue_comment.created.pull_request": ("ignored", []),
    "issue_comment.edited": ("ignored", []),
    "installation.created": ("queued", ["refresh_index"]),
    "installation_repositories.added": ("queued", ["refresh_index"]),
    "push": ("queued", ["refresh_index"]),
    "pull_request.closed": ("ignored", []),
    "pull_request.closed.merged": ("ignored", []),
    "ping": ("ignored", []),
}


def test_every_fixture_is_covered() -> None:
    assert {p.name.removesuffix(".json") for p in FIXTURES.glob("*.json")} == set(EXPECTED)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_fixture_delivery(h: Harness, stem: str) -> None:
    status, actors = EXPECTED[stem]
    reply = h.post(stem)
    assert reply.status_code == 202
    body = reply.json()
    assert body["status"] == status
    assert body["jobs"] == len(actors)
    assert [job.actor for job in h.queue.jobs] == actors
    record = h.store.records["delivery-1"]
    assert record.status == status
    assert record.event == event_of(stem)
    if status == "ignored":
        assert body["reason"] and record.reason == body["reason"]
    for job in h.queue.jobs:
        assert job.context["delivery_id"] == "delivery-1"
        assert job.idempotency_key
        json.dumps(job.as_dict())  # the message body must be JSON


def test_record_keeps_the_payload_digest_and_ids(h: Harness) -> None:
    payload = load("issues.labeled")
    h.post("issues.labeled", payload)
    record = h.store.records["delivery-1"]
    assert record.action == "labeled"
    assert record.repo == "Codertocat/Hello-World"
    import hashlib

    assert record.payload_sha256 == hashlib.sha256(encode(payload)).hexdigest()


def test_fork_run_is_ignored_and_the_reason_recorded(h: Harness) -> None:
    payload = load("workflow_run.completed.failure", workflow_run__head_repository__id=999_999)
    reply = h.post("workflow_run", payload)
    assert reply.status_code == 202 and reply.json()["status"] == "ignored"
    assert "fork" in reply.json()["reason"]
    assert "fork" in (h.store.records["delivery-1"].reason or "")
    assert h.queue.jobs == []


def test_unrouted_event_is_acknowledged_and_recorded(h: Harness) -> None:
    body = encode({"action": "started", "repository": {"full_name": "o/r"}})
    reply = h.client.post("/webhooks/github", content=body, headers=headers("watch", body))
    assert reply.status_code == 202
    assert reply.json() == {"status": "ignored", "jobs": 0, "reason": "event watch is not handled"}
    assert h.store.records["delivery-1"].status == "ignored"


def test_command_comment_enqueues_handle_command(h: Harness) -> None:
    payload = load("issue_comment.created", comment__body="/arcs fix tier=small")
    reply = h.post("issue_comment", payload)
    assert reply.json()["status"] == "queued"
    (job,) = h.queue.jobs
    assert job.actor == "handle_command"
    assert job.args["command"]["tier"] == "small"


# --- malformed input: 4xx and nothing recorded or enqueued -----------------------------------


def raw_post(h: Harness, body: bytes, hdrs: dict[str, str]) -> Any:
    return h.client.post("/webhooks/github", content=body, headers=hdrs)


def test_bad_signature(h: Harness) -> None:
    body = encode(load("issues.labeled"))
    hdrs = headers("issues", body, secret="wrong")
    reply = raw_post(h, body, hdrs)
    assert reply.status_code == 401 and reply.json()["status"] == "rejected"
    assert h.nothing_done()


def test_missing_signature(h: Harness) -> None:
    body = encode(load("issues.labeled"))
    hdrs = headers("issues", body)
    del hdrs["X-Hub-Signature-256"]
    reply = raw_post(h, body, hdrs)
    assert reply.status_code == 401 and "missing" in reply.json()["reason"]
    assert h.nothing_done()


def test_sha1_only(h: Harness) -> None:
    import hashlib
    import hmac

    body = encode(load("issues.labeled"))
    hdrs = headers("issues", body)
    del hdrs["X-Hub-Signature-256"]
    hdrs["X-Hub-Signature"] = "sha1=" + hmac.new(b"test-webhook-secret", body, hashlib.sha1).hexdigest()
    reply = raw_post(h, body, hdrs)
    assert reply.status_code == 401 and "SHA-1" in reply.json()["reason"]
    assert h.nothing_done()


def test_no_secret_configured_never_accepts(settings: Settings) -> None:
    store, queue = MemoryDeliveryStore(), ListEnqueuer()
    with TestClient(create_app(settings, store=store, enqueuer=queue)) as client:
        body = encode(load("issues.labeled"))
        reply = client.post("/webhooks/github", content=body, headers=headers("issues", body))
    assert reply.status_code == 503 and reply.json()["reason"] == "webhook secret not configured"
    assert store.records == {} and queue.jobs == []


def test_oversized_by_content_length_is_refused_before_reading() -> None:
    async def receive() -> Any:
        raise AssertionError("the body must not be read")

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/webhooks/github",
        "headers": [(b"content-length", str(MAX_BODY_BYTES + 1).encode())],
    }
    with pytest.raises(WebhookRejected) as caught:
        asyncio.run(read_body(Request(scope, receive)))
    assert caught.value.status_code == 413


def test_oversized_streamed_body_without_length(h: Harness) -> None:
    chunk = b" " * (1024 * 1024)
    sent = 0

    def body() -> Iterator[bytes]:
        nonlocal sent
        for _ in range(MAX_BODY_BYTES // len(chunk) + 1):
            sent += len(chunk)
            yield chunk

    hdrs = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d", "X-Hub-Signature-256": "sha256=" + "0" * 64}
    reply = h.client.post("/webhooks/github", content=body(), headers=hdrs)
    assert reply.status_code == 413
    assert h.nothing_done()


def test_body_exactly_at_the_limit_is_read() -> None:
    data = b"x" * 10

    async def receive() -> Any:
        return {"type": "http.request", "body": data, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    assert asyncio.run(read_body(Request(scope, receive), limit=10)) == data
    with pytest.raises(WebhookRejected):
        asyncio.run(read_body(Request(scope, receive), limit=9))


def test_truncated_json(h: Harness) -> None:
    body = encode(load("issues.labeled"))[:-20]
    reply = raw_post(h, body, headers("issues", body))
    assert reply.status_code == 400 and "malformed JSON" in reply.json()["reason"]
    assert h.nothing_done()


@pytest.mark.parametrize("body", [b"[]", b'"x"', b"42", b"null", b"\xff\xfe"])
def test_payload_must_be_a_json_object(h: Harness, body: bytes) -> None:
    reply = raw_post(h, body, headers("issues", body))
    assert reply.status_code == 400
    assert h.nothing_done()


def test_unknown_action_of_a_routed_event(h: Harness) -> None:
    payload = load("issues.labeled", action="frobnicated")
    reply = h.post("issues", payload)
    assert reply.status_code == 400
    assert reply.json()["reason"] == "unknown issues action 'frobnicated'"
    assert h.nothing_done()


def test_unrouted_action_is_still_validated(h: Harness) -> None:
    payload = load("issues.opened")
    del payload["issue"]
    reply = h.post("issues", payload)
    assert reply.status_code == 400 and "issue" in reply.json()["reason"]
    assert h.nothing_done()


def test_payload_that_does_not_match_the_schema(h: Harness) -> None:
    payload = load("workflow_run.completed.failure")
    del payload["workflow_run"]
    reply = h.post("workflow_run", payload)
    assert reply.status_code == 400 and "workflow_run" in reply.json()["reason"]
    assert h.nothing_done()


@pytest.mark.parametrize("missing", ["X-GitHub-Event", "X-GitHub-Delivery"])
def test_missing_github_headers(h: Harness, missing: str) -> None:
    body = encode(load("ping"))
    hdrs = headers("ping", body)
    del hdrs[missing]
    reply = raw_post(h, body, hdrs)
    assert reply.status_code == 400 and missing in reply.json()["reason"]
    assert h.nothing_done()


def test_malformed_delivery_id(h: Harness) -> None:
    body = encode(load("ping"))
    reply = raw_post(h, body, headers("ping", body, delivery="../../etc/passwd x"))
    assert reply.status_code == 400
    assert h.nothing_done()


def test_form_encoded_payload(h: Harness) -> None:
    body = b"payload=%7B%7D"
    hdrs = headers("ping", body)
    hdrs["Content-Type"] = "application/x-www-form-urlencoded"
    reply = raw_post(h, body, hdrs)
    assert reply.status_code == 415
    assert h.nothing_done()


def test_get_is_not_allowed(h: Harness) -> None:
    assert h.client.get("/webhooks/github").status_code == 405


# --- idempotency ------------------------------------------------------------------------------


def test_redelivery_is_acknowledged_and_ignored(h: Harness) -> None:
    first = h.post("issues.labeled")
    second = h.post("issues.labeled")
    assert first.status_code == 202 and first.json()["status"] == "queued"
    assert second.status_code == 200 and second.json()["status"] == "duplicate"
    assert len(h.queue.jobs) == 1


def test_other_delivery_of_the_same_event_is_new(h: Harness) -> None:
    h.post("issues.labeled", delivery="a")
    h.post("issues.labeled", delivery="b")
    assert len(h.queue.jobs) == 2  # the worker's idempotency key decides about the attempt


def test_concurrent_duplicates_enqueue_once(settings: Settings) -> None:
    store, queue = MemoryDeliveryStore(), ListEnqueuer()
    app = create_app(with_secret(settings), store=store, enqueuer=queue)
    body = encode(load("issues.labeled"))
    hdrs = headers("issues", body, delivery="same")

    async def burst() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://arcs") as client:
            replies = await asyncio.gather(
                *(client.post("/webhooks/github", content=body, headers=hdrs) for _ in range(25))
            )
        return sorted(r.status_code for r in replies)

    codes = asyncio.run(burst())
    assert codes.count(202) == 1 and codes.count(200) == 24
    assert len(queue.jobs) == 1


def test_fake_store_is_atomic_under_threads() -> None:
    store = MemoryDeliveryStore()
    barrier = threading.Barrier(16)
    results: list[bool] = []
    lock = threading.Lock()

    def record() -> None:
        barrier.wait()
        fresh = store.record_delivery("d", "issues", "labeled", 1, "o/r", "0" * 64, "queued", None)
        with lock:
            results.append(fresh)

    threads = [threading.Thread(target=record) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 15 + [True]


# --- outages: 503 and nothing half-done -------------------------------------------------------


def status_of(h: Harness, delivery: str) -> str:
    return h.store.records[delivery].status


def test_broker_down_marks_the_delivery_failed_and_a_redelivery_is_processed(h: Harness) -> None:
    h.queue.down = True
    reply = h.post("issues.labeled")
    assert reply.status_code == 503 and reply.json()["reason"] == "broker unavailable"
    assert status_of(h, "delivery-1") == "failed"
    assert h.queue.jobs == []

    h.queue.down = False
    again = h.post("issues.labeled")  # GitHub's "Redeliver": same delivery id
    assert again.status_code == 202 and again.json()["status"] == "queued"
    assert status_of(h, "delivery-1") == "queued"
    assert len(h.queue.jobs) == 1


def test_database_down_enqueues_nothing(h: Harness) -> None:
    h.store.down = True
    reply = h.post("issues.labeled")
    assert reply.status_code == 503 and reply.json()["reason"] == "database unavailable"
    assert h.queue.jobs == []


def test_ignored_delivery_with_the_database_down_is_503_too(h: Harness) -> None:
    h.store.down = True
    assert h.post("ping").status_code == 503


# --- probes ----------------------------------------------------------------------------------


def test_healthz(h: Harness) -> None:
    reply = h.client.get("/healthz")
    assert reply.status_code == 200 and reply.json() == {"status": "ok"}


def test_healthz_does_not_depend_on_the_database(h: Harness) -> None:
    h.store.down = True
    h.queue.down = True
    assert h.client.get("/healthz").status_code == 200


def test_readyz(h: Harness) -> None:
    reply = h.client.get("/readyz")
    assert reply.status_code == 200
    assert reply.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}


@pytest.mark.parametrize(("db_down", "broker_down"), [(True, False), (False, True), (True, True)])
def test_readyz_reports_what_is_down(h: Harness, db_down: bool, broker_down: bool) -> None:
    h.store.down = db_down
    h.queue.down = broker_down
    reply = h.client.get("/readyz")
    assert reply.status_code == 503
    checks = reply.json()["checks"]
    assert checks["database"] == ("error: ConnectionError" if db_down else "ok")
    assert checks["broker"] == ("error: ConnectionError" if broker_down else "ok")


def test_signature_helper_matches_the_endpoint(h: Harness) -> None:
    body = encode(load("ping"))
    assert sign(body).startswith("sha256=")
    assert h.post("ping").status_code == 202


# --- latency (for /metrics) ---------------------------------------------------------------------


def latency_of(h: Harness, delivery: str) -> float | None:
    return h.store.records[delivery].latency_ms


def test_latency_is_recorded_for_the_deliveries_a_request_recorded(h: Harness) -> None:
    assert h.post("issues.labeled", delivery="q").json()["status"] == "queued"
    assert h.post("ping", delivery="i").json()["status"] == "ignored"
    for delivery in ("q", "i"):
        latency = latency_of(h, delivery)
        assert latency is not None and latency > 0


def test_a_duplicate_keeps_the_first_latency(h: Harness) -> None:
    h.post("ping")
    first = latency_of(h, "delivery-1")
    assert h.post("ping").json()["status"] == "duplicate"
    assert latency_of(h, "delivery-1") == first


def test_latency_is_recorded_when_the_broker_failed(h: Harness) -> None:
    h.queue.down = True
    assert h.post("issues.labeled").status_code == 503
    assert latency_of(h, "delivery-1") is not None


def test_rejected_deliveries_record_no_latency(h: Harness) -> None:
    body = encode(load("ping"))
    reply = raw_post(h, body, headers("ping", body, secret="wrong"))
    assert reply.status_code == 401 and h.store.records == {}


def test_a_latency_failure_never_fails_the_webhook(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(delivery_id: str, latency_ms: float) -> None:
        raise ConnectionError("database went away")

    monkeypatch.setattr(h.store, "set_delivery_latency", broken)
    with structlog.testing.capture_logs() as logs:
        reply = h.post("issues.labeled")
    assert reply.status_code == 202 and reply.json()["status"] == "queued"
    assert len(h.queue.jobs) == 1
    assert [e for e in logs if e["event"] == "webhook_latency_not_saved"]
