"""POST /webhooks/github end to end (in process, fake store and queue) and the probes."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.testclient import TestClient

from bot.settings import Settings
from bot.web.app import create_app
from bot.web.fakes import ListEnqueuer, MemoryDeliveryStore
from bot.web.relay import Relay
from bot.web.webhooks import MAX_BODY_BYTES, WebhookRejected, read_body
from jobs.messages import Envelope, HandleCommand
from tests.bot.webhook_support import (
    FIXTURES,
    encode,
    event_of,
    headers,
    load,
    sign,
    with_secret,
)


class Clock:
    """A settable clock for the fake store's relay grace."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Harness:
    """An app with in-memory ports and a client."""

    def __init__(self, settings: Settings) -> None:
        self.clock = Clock()
        self.store = MemoryDeliveryStore(clock=self.clock)
        self.queue = ListEnqueuer()
        self.app = create_app(with_secret(settings), store=self.store, enqueuer=self.queue)
        self.client = TestClient(self.app)

    @property
    def relay(self) -> Relay:
        relay: Relay = self.app.state.relay
        return relay

    def settle(self) -> None:
        """Write the relay's pending confirmations now (its thread does it soon anyway)."""
        self.relay.flush()

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
    "check_run.requested_action": ("ignored", []),  # another App's button
    "check_run.requested_action.arcs": ("queued", ["handle_command"]),
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
    "pull_request_review_comment.created": ("ignored", []),  # no command
    "pull_request_review_comment.created.command": ("queued", ["handle_command"]),
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
    h.settle()
    record = h.store.records["delivery-1"]
    assert record.status == ("enqueued" if status == "queued" else status)
    assert (record.jobs or []) == [job.to_json() for job in h.queue.jobs]  # the outbox
    # The outbox holds typed messages (v1) that decode, validated, to what was enqueued.
    assert [Envelope.from_json(json.loads(json.dumps(job))) for job in record.jobs or []] == h.queue.jobs
    assert all(job["v"] == 1 and "body" in job for job in record.jobs or [])
    assert record.event == event_of(stem)
    if status == "ignored":
        assert body["reason"] and record.reason == body["reason"]
    for job in h.queue.jobs:
        assert job.context["delivery_id"] == "delivery-1"
        assert job.idempotency_key
        json.dumps(job.to_json())  # the message body must be JSON


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
    command = job.expect(HandleCommand).command
    assert command is not None and command.tier == "small"


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


def test_unknown_action_of_a_routed_event_is_acknowledged(h: Harness) -> None:
    # GitHub adds actions; one we do not route is normal traffic (it was a 400 before #11).
    payload = load("issues.labeled", action="frobnicated")
    reply = h.post("issues", payload)
    assert reply.status_code == 202
    assert reply.json()["reason"] == "issues.frobnicated is not handled"
    assert h.store.records["delivery-1"].status == "ignored" and h.queue.jobs == []


def test_an_unrouted_action_is_not_read(h: Harness) -> None:
    payload = load("issues.opened")
    del payload["issue"]
    reply = h.post("issues", payload)
    assert reply.status_code == 202 and reply.json()["status"] == "ignored"


def test_payload_without_what_the_handler_needs(h: Harness) -> None:
    payload = load("workflow_run.completed.failure")
    del payload["workflow_run"]
    reply = h.post("workflow_run", payload)
    assert reply.status_code == 400
    assert reply.json()["reason"] == "workflow_run.completed payload: workflow_run is missing"
    assert h.nothing_done()


@pytest.mark.parametrize(
    ("stem", "patch", "reason"),
    [
        (
            "issue_comment.created",
            {"comment__body": 42},
            "issue_comment.created payload: comment.body: input should be a valid string",
        ),
        (
            "push",
            {"repository__default_branch": None},
            "push payload: repository.default_branch: input should be a valid string",
        ),
        (
            "issues.labeled",
            {"issue__number": "one"},
            "issues.labeled payload: issue.number: input should be a valid integer, "
            "unable to parse string as an integer",
        ),
        (
            "check_run.completed.failure",
            {"check_run__head_sha": None, "repository__id": None},
            "check_run.completed payload: repository.id: input should be a valid integer; "
            "check_run.head_sha: input should be a valid string",
        ),
    ],
)
def test_a_needed_field_of_the_wrong_type_is_named(
    h: Harness, stem: str, patch: dict[str, Any], reason: str
) -> None:
    reply = h.post(stem, load(stem, **patch))
    assert reply.status_code == 400 and reply.json()["reason"] == reason
    assert h.nothing_done()


def test_a_needed_field_missing_is_named(h: Harness) -> None:
    payload = load("pull_request.closed.merged", pull_request__head__ref="arcs/fix-1")
    del payload["pull_request"]["closed_at"]
    reply = h.post("pull_request", payload)
    assert reply.status_code == 400
    assert reply.json()["reason"] == "pull_request.closed payload: pull_request.closed_at is missing"
    assert h.nothing_done()


def test_fields_the_bot_never_reads_cannot_refuse_a_delivery(h: Harness) -> None:
    # The two fields of #11: absent on GHES and older deliveries, odd shapes tolerated too.
    created = load("installation.created")
    created["installation"].pop("app_slug", None)
    created["installation"]["permissions"] = "not an object"
    assert h.post("installation", created, delivery="a").json()["status"] == "queued"
    run = load("check_run.completed.failure")
    run["check_run"]["app"].pop("permissions", None)
    run["check_run"]["app"]["events"] = None
    assert h.post("check_run", run, delivery="b").json()["status"] == "queued"


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


def test_broker_down_keeps_the_jobs_and_a_redelivery_after_the_grace_enqueues_them(h: Harness) -> None:
    h.queue.down = True
    reply = h.post("issues.labeled")
    assert reply.status_code == 202 and reply.json()["status"] == "recorded", reply.text
    assert "broker unavailable" in reply.json()["reason"]
    assert status_of(h, "delivery-1") == "received"
    assert h.store.records["delivery-1"].jobs  # the outbox holds them
    assert h.queue.jobs == []

    h.queue.down = False
    soon = h.post("issues.labeled")  # within the grace: the request that recorded it may be running
    assert soon.status_code == 200 and soon.json()["status"] == "duplicate"
    h.clock.now += h.store.grace_s + 1
    again = h.post("issues.labeled")  # GitHub's "Redeliver": same delivery id
    assert again.status_code == 202 and again.json()["status"] == "queued"
    h.settle()
    assert status_of(h, "delivery-1") == "enqueued"
    assert len(h.queue.jobs) == 1
    assert h.post("issues.labeled").json()["status"] == "duplicate"


def test_broker_down_then_the_relay_enqueues_without_a_redelivery(h: Harness) -> None:
    h.relay.stop()  # the test drives the relay itself
    h.queue.down = True
    assert h.post("issues.labeled").json()["status"] == "recorded"
    h.queue.down = False
    assert h.relay.sweep() == 0  # within the grace: not yet
    h.clock.now += h.store.grace_s + 1
    assert h.relay.sweep() == 1
    assert [job.actor for job in h.queue.jobs] == ["repair_issue"]
    assert status_of(h, "delivery-1") == "enqueued"
    h.clock.now += h.store.grace_s + 1
    assert h.relay.sweep() == 0  # once


OLD_OUTBOX_JOB = {
    "actor": "repair_issue",
    "args": {"repo": "o/r", "installation_id": 7, "delivery_id": "d-old", "issue_number": 3, "label": "arcs"},
    "context": {"delivery_id": "d-old", "repo": "o/r"},
    "idempotency_key": "issue:o/r#3:d-old",
}
"""A job in the outbox as the code before typed messages wrote it (v1 dict)."""


def test_the_relay_decodes_old_outbox_rows_and_skips_jobs_that_never_decode(h: Harness) -> None:
    h.relay.stop()  # the test drives the relay itself
    h.queue.down = True
    assert h.post("issues.labeled").json()["status"] == "recorded"
    h.queue.down = False
    record = h.store.records["delivery-1"]
    fresh = list(record.jobs or [])
    record.jobs = [OLD_OUTBOX_JOB, {**fresh[0], "v": 99}, *fresh]
    h.clock.now += h.store.grace_s + 1
    assert h.relay.sweep() == 1
    old, new = h.queue.jobs
    assert old == Envelope.from_json(OLD_OUTBOX_JOB) and old.to_json()["v"] == 1
    assert new.to_json() == fresh[0]
    assert status_of(h, "delivery-1") == "enqueued"


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
    assert h.post("issues.labeled").json()["status"] == "recorded"
    assert latency_of(h, "delivery-1") is not None


def test_the_answer_latency_replaces_the_provisional_one(h: Harness) -> None:
    h.post("issues.labeled")
    provisional = latency_of(h, "delivery-1")
    h.settle()
    final = latency_of(h, "delivery-1")
    assert provisional is not None and final is not None and final >= provisional


def test_rejected_deliveries_record_no_latency(h: Harness) -> None:
    body = encode(load("ping"))
    reply = raw_post(h, body, headers("ping", body, secret="wrong"))
    assert reply.status_code == 401 and h.store.records == {}


def test_a_failure_to_mark_enqueued_never_fails_the_webhook(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h.relay.stop()  # the test drives the relay itself
    real = h.store.mark_enqueued

    def broken(confirmed: Any) -> int:
        raise ConnectionError("database went away")

    monkeypatch.setattr(h.store, "mark_enqueued", broken)
    reply = h.post("issues.labeled")
    assert reply.status_code == 202 and reply.json()["status"] == "queued"
    assert len(h.queue.jobs) == 1
    with pytest.raises(ConnectionError):
        h.settle()
    assert h.relay.pending == 1  # kept for the next try
    monkeypatch.setattr(h.store, "mark_enqueued", real)
    h.settle()
    assert status_of(h, "delivery-1") == "enqueued" and h.relay.pending == 0


# --- hardening: one id limit, deep JSON, bounded answers, body limits ---------------------------


def test_delivery_ids_are_limited_to_what_the_store_holds(h: Harness) -> None:
    from bot.store.models import DELIVERY_ID_MAX, Attempt, Delivery, Event

    for column in (Delivery.delivery_id, Attempt.delivery_id, Event.delivery_id):
        assert column.type.length == DELIVERY_ID_MAX  # type: ignore[attr-defined]
    assert h.post("ping", delivery="d" * DELIVERY_ID_MAX).status_code == 202
    too_long = h.post("ping", delivery="e" * (DELIVERY_ID_MAX + 1))
    assert too_long.status_code == 400 and "X-GitHub-Delivery" in too_long.json()["reason"]
    assert "e" * (DELIVERY_ID_MAX + 1) not in h.store.records


@pytest.mark.parametrize("depth", [65, 5_000, 100_000])
def test_deeply_nested_json_is_refused(h: Harness, depth: int) -> None:
    body = b'{"action":"labeled","x":' + b"[" * depth + b"]" * depth + b"}"
    reply = raw_post(h, body, headers("issues", body))
    assert reply.status_code == 400 and "nested deeper" in reply.json()["reason"]
    assert h.nothing_done()


def test_nesting_up_to_the_limit_is_read(h: Harness) -> None:
    from bot.web.webhooks import MAX_JSON_DEPTH, load_json

    inner = b"[" * (MAX_JSON_DEPTH - 1) + b"]" * (MAX_JSON_DEPTH - 1)
    assert load_json(b'{"x":' + inner + b"}")["x"] is not None


class SlowStore(MemoryDeliveryStore):
    """A database that hangs (longer than any answer may take)."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    def record_deliveries(self, rows: Any) -> set[str]:
        import time

        time.sleep(self.delay_s)
        return super().record_deliveries(rows)


class SlowQueue(ListEnqueuer):
    def enqueue(self, job: Any) -> None:
        import time

        time.sleep(8)
        super().enqueue(job)


def _timed_post(client: TestClient, stem: str, delivery: str) -> tuple[Any, float]:
    import time

    body = encode(load(stem))
    began = time.monotonic()
    reply = client.post(
        "/webhooks/github", content=body, headers=headers(event_of(stem), body, delivery=delivery)
    )
    return reply, time.monotonic() - began


def test_a_hanging_database_gets_503_within_the_deadline(settings: Settings) -> None:
    from bot.web.webhooks import ANSWER_DEADLINE_S

    store, queue = SlowStore(8.0), ListEnqueuer()
    with TestClient(create_app(with_secret(settings), store=store, enqueuer=queue)) as client:
        reply, elapsed = _timed_post(client, "issues.labeled", "slow-db")
    assert reply.status_code == 503 and "in time" in reply.json()["reason"]
    assert elapsed < ANSWER_DEADLINE_S + 1.0
    # The write the answer gave up on finished later (the shutdown waited for it). Its writer had
    # answered 503, so it leaves the row to one later claim (bot.web.intake): the outbox holds the
    # job, GitHub's redelivery within the grace is a duplicate, the relay enqueues it once.
    assert queue.jobs == [] and store.records["slow-db"].status == "received"
    assert store.records["slow-db"].jobs
    store.delay_s = 0
    with TestClient(create_app(with_secret(settings), store=store, enqueuer=queue)) as client:
        again, _ = _timed_post(client, "issues.labeled", "slow-db")
        assert again.json()["status"] == "duplicate" and queue.jobs == []
        store.grace_s = 0.0
        relay = client.app.state.relay  # type: ignore[attr-defined]
        assert relay.sweep() == 1 and relay.sweep() == 0
    assert [job.idempotency_key for job in queue.jobs] == ["issue:Codertocat/Hello-World#1:slow-db"]


def test_a_hanging_broker_gets_202_recorded_within_the_deadline(settings: Settings) -> None:
    from bot.web.webhooks import ANSWER_DEADLINE_S

    store, queue = MemoryDeliveryStore(), SlowQueue()
    with TestClient(create_app(with_secret(settings), store=store, enqueuer=queue)) as client:
        reply, elapsed = _timed_post(client, "issues.labeled", "slow-broker")
    assert reply.status_code == 202 and reply.json()["status"] == "recorded"
    assert elapsed < ANSWER_DEADLINE_S + 1.0
    assert store.records["slow-broker"].jobs  # the outbox holds them for the relay
    # The slow enqueue finished while the app shut down: confirmed, once.
    assert len(queue.jobs) == 1 and store.records["slow-broker"].status == "enqueued"


def _scope(length: int | None = None) -> dict[str, Any]:
    hdrs = [] if length is None else [(b"content-length", str(length).encode())]
    return {"type": "http", "method": "POST", "path": "/", "headers": hdrs}


def test_a_body_that_does_not_arrive_in_time_is_408() -> None:
    async def receive() -> Any:
        await asyncio.sleep(0.05)
        return {"type": "http.request", "body": b"x", "more_body": True}  # forever

    with pytest.raises(WebhookRejected) as caught:
        asyncio.run(read_body(Request(_scope(), receive), timeout_s=0.3))
    assert caught.value.status_code == 408


def test_the_body_budget_refuses_and_gives_everything_back() -> None:
    from bot.web.webhooks import BodyBudget

    budget = BodyBudget(100)
    assert budget.take(70)  # another request holds 70 bytes
    chunks = iter([b"a" * 20, b"b" * 20])

    async def receive() -> Any:
        chunk = next(chunks)
        return {"type": "http.request", "body": chunk, "more_body": True}

    with pytest.raises(WebhookRejected) as caught:
        asyncio.run(read_body(Request(_scope(), receive), budget=budget))
    assert caught.value.status_code == 503
    assert budget.used == 70  # what this request had taken (20) is released

    async def whole() -> Any:
        return {"type": "http.request", "body": b"c" * 30, "more_body": False}

    assert asyncio.run(read_body(Request(_scope(30), whole), budget=budget)) == b"c" * 30
    assert budget.used == 100  # held until the caller has verified the signature


def test_the_endpoint_releases_the_budget_after_verifying(h: Harness) -> None:
    budget = h.app.state.body_budget
    assert h.post("ping").status_code == 202
    body = encode(load("ping"))
    assert raw_post(h, body, headers("ping", body, secret="wrong")).status_code == 401
    assert budget.used == 0
