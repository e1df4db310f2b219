"""``GET /metrics``: parsed with prometheus_client's own parser, numbers checked against seeded
rows on SQLite and PostgreSQL; the bearer token; the queue depth sources."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr
from sqlalchemy import create_engine, text
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from bot.dashboard.metrics import MetricsEndpoint, QueueDepthProbe, queue_depth_probe
from bot.settings import Settings
from bot.store.store import Store
from bot.web.fakes import ListEnqueuer

T0 = dt.datetime(2025, 3, 13, 12, 0, tzinfo=dt.UTC)
TABLES = "deliveries, attempts, pull_requests, events, policies, dashboard_sessions"


def seed(store: Store) -> None:
    """Attempts, deliveries and pull requests whose aggregates the tests know."""

    def attempt(key: str, status: str, seconds: float | None = None, **fields: Any) -> None:
        if seconds is not None:
            fields.update(started_at=T0, finished_at=T0 + dt.timedelta(seconds=seconds))
        store.claim_attempt(key, repo="acme/widgets", trigger="ci", status=status, **fields)

    attempt("a1", "fixed", 10, tokens=1000, cost_usd=0.5)
    attempt("a2", "fixed", 70, tokens=3000, cost_usd=1.25)
    attempt("a3", "no_fix", 400, tokens=500, cost_usd=0.25)
    attempt("a4", "error", 2)
    attempt("a5", "refused")  # refused before it started: no duration
    attempt("a6", "running", started_at=T0)
    attempt("a7", "queued")
    attempt("a8", "queued")
    attempt("a9", "skipped")
    for i, latency in enumerate([3.0, 40.0, 700.0, 12_000.0, None]):
        delivery = f"d{i}"
        store.record_delivery(delivery, "ping", None, 1, "acme/widgets", "0" * 64, "ignored", "ping")
        if latency is not None:
            store.set_delivery_latency(delivery, latency)
    for number, state in [(1, "open"), (2, "open"), (3, "merged"), (4, "closed")]:
        store.record_pr(
            repo="acme/gadgets",
            number=number,
            url=f"https://x/{number}",
            branch=f"arcs/{number}",
            state=state,
        )


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A seeded store on each backend."""
    if request.param == "sqlite":
        opened = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    else:
        opened = Store.open(request.getfixturevalue("dash_pg_url"))
        with opened.engine.begin() as conn:
            conn.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))
    seed(opened)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    seed(opened)
    try:
        yield opened
    finally:
        opened.close()


def client_for(settings: Settings, store: Store, queue_depth: QueueDepthProbe | None = None) -> TestClient:
    endpoint = MetricsEndpoint(settings, store, queue_depth=queue_depth)
    return TestClient(Starlette(routes=[Route("/metrics", endpoint.handle)]))


def scrape(
    client: TestClient, **headers: str
) -> tuple[dict[tuple[str, tuple[tuple[str, str], ...]], float], str]:
    """Sample values keyed by (name, sorted labels), and the raw text."""
    reply = client.get("/metrics", headers=headers)
    assert reply.status_code == 200, reply.text
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(reply.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples, reply.text


def one(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def test_metrics_match_the_seeded_rows(settings: Settings, store: Store) -> None:
    samples, body = scrape(client_for(settings, store))
    for status, count in {"fixed": 2, "no_fix": 1, "refused": 1, "error": 1, "skipped": 1}.items():
        assert one(samples, "arcs_attempts_total", status=status) == count
    assert one(samples, "arcs_attempts_in_progress", status="queued") == 2
    assert one(samples, "arcs_attempts_in_progress", status="running") == 1
    assert one(samples, "arcs_queue_depth") == 2

    # Durations 10, 70, 400 and 2 seconds (the refused, running and queued ones have none).
    expected_jobs = {"5.0": 1, "15.0": 2, "30.0": 2, "60.0": 2, "120.0": 3, "300.0": 3, "600.0": 4, "+Inf": 4}
    for le, count in expected_jobs.items():
        assert one(samples, "arcs_job_duration_seconds_bucket", le=le) == count, le
    assert one(samples, "arcs_job_duration_seconds_count") == 4
    assert one(samples, "arcs_job_duration_seconds_sum") == pytest.approx(482.0, abs=1e-3)

    assert one(samples, "arcs_llm_tokens_total") == 4500
    assert one(samples, "arcs_llm_usd_total") == pytest.approx(2.0)

    # Latencies 3 ms, 40 ms, 0.7 s and 12 s (one delivery has none).
    expected_hooks = {"0.005": 1, "0.025": 1, "0.05": 2, "0.5": 2, "1.0": 3, "10.0": 3, "+Inf": 4}
    for le, count in expected_hooks.items():
        assert one(samples, "arcs_webhook_latency_seconds_bucket", le=le) == count, le
    assert one(samples, "arcs_webhook_latency_seconds_count") == 4
    assert one(samples, "arcs_webhook_latency_seconds_sum") == pytest.approx(12.743)

    assert one(samples, "arcs_pull_requests", state="open") == 2
    assert one(samples, "arcs_pull_requests", state="merged") == 1
    assert one(samples, "arcs_pull_requests", state="closed") == 1

    # No org or repository name leaks.
    assert "acme" not in body and "widgets" not in body and "gadgets" not in body


def test_an_empty_store_reports_zeros(settings: Settings, tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'empty.db'}") as empty:
        samples, _ = scrape(client_for(settings, empty))
    assert one(samples, "arcs_attempts_total", status="fixed") == 0
    assert one(samples, "arcs_job_duration_seconds_count") == 0
    assert one(samples, "arcs_webhook_latency_seconds_bucket", le="+Inf") == 0
    assert one(samples, "arcs_llm_usd_total") == 0


def test_the_answer_is_prometheus_text(settings: Settings, sqlite_store: Store) -> None:
    reply = client_for(settings, sqlite_store).get("/metrics")
    assert reply.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "# TYPE arcs_job_duration_seconds histogram" in reply.text
    assert "# TYPE arcs_attempts_total counter" in reply.text


def test_the_metrics_token_is_enforced(settings: Settings, sqlite_store: Store) -> None:
    guarded = settings.model_copy(update={"metrics_token": SecretStr("s3cret-token")})
    client = client_for(guarded, sqlite_store)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret-token"}):
        reply = client.get("/metrics", headers=headers)
        assert reply.status_code == 401, headers
        assert reply.headers["www-authenticate"].startswith("Bearer")
        assert "arcs_" not in reply.text
    samples, _ = scrape(client, Authorization="Bearer s3cret-token")
    assert one(samples, "arcs_llm_tokens_total") == 4500
    # Without a token configured the endpoint is open.
    assert client_for(settings, sqlite_store).get("/metrics").status_code == 200


def test_the_queue_depth_comes_from_the_enqueuer_when_it_can_tell(
    settings: Settings, sqlite_store: Store
) -> None:
    queue = ListEnqueuer(depth=7)
    samples, body = scrape(client_for(settings, sqlite_store, queue_depth_probe(queue)))
    assert one(samples, "arcs_queue_depth") == 7
    assert "waiting in the broker" in body

    queue.depth = None  # the broker cannot tell: the queued attempts count
    samples, body = scrape(client_for(settings, sqlite_store, queue_depth_probe(queue)))
    assert one(samples, "arcs_queue_depth") == 2
    assert "queued attempts in the database" in body

    queue.down = True
    with structlog.testing.capture_logs() as logs:
        samples, _ = scrape(client_for(settings, sqlite_store, queue_depth_probe(queue)))
    assert one(samples, "arcs_queue_depth") == 2
    assert [e["event"] for e in logs] == ["metrics_queue_depth_failed"]


def test_the_broker_enqueuer_reports_the_depth_of_dramatiq_queues() -> None:
    import dramatiq
    from dramatiq.brokers.stub import StubBroker

    from jobs.broker import BrokerEnqueuer, queue_depth

    stub = StubBroker()
    stub.declare_queue("repairs")
    for _ in range(3):
        stub.enqueue(dramatiq.Message(queue_name="repairs", actor_name="x", args=(), kwargs={}, options={}))
    probe = queue_depth_probe(BrokerEnqueuer(stub))
    assert probe is not None and probe() == 3

    class FakeRedis:
        def __init__(self, lengths: dict[str, int]) -> None:
            self.lengths = lengths

        def llen(self, key: str) -> int:
            return self.lengths[key]

    class RedisBroker:  # what dramatiq's Redis broker offers: declared queues, a namespace, a client
        def __init__(self) -> None:
            self.namespace = "dramatiq"
            self.queues = {"repairs", "repairs.DQ", "index"}
            self.client = FakeRedis({"dramatiq:repairs": 4, "dramatiq:index": 1, "dramatiq:repairs.DQ": 9})

    # Delay queues (.DQ) hold retries that are not due yet: not counted.
    assert queue_depth(RedisBroker()) == 5  # type: ignore[arg-type]

    class RabbitmqBroker:
        def __init__(self) -> None:
            self.queues = {"repairs"}

    assert queue_depth(RabbitmqBroker()) is None  # type: ignore[arg-type]
    assert queue_depth_probe(SimpleNamespace(broker=stub)) is None  # not an enqueuer that can tell
    assert queue_depth_probe(None) is None


def test_a_database_outage_answers_503(settings: Settings, tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'arcs.db'}")
    store.engine = create_engine(
        "postgresql+psycopg://nobody@127.0.0.1:9/none", connect_args={"connect_timeout": 2}
    )
    with structlog.testing.capture_logs() as logs:
        reply = client_for(settings, store).get("/metrics")
    store.close()
    assert reply.status_code == 503
    assert "metrics_unavailable" in [e["event"] for e in logs]


def test_scrapes_read_the_database_each_time(settings: Settings, sqlite_store: Store) -> None:
    client = client_for(settings, sqlite_store)
    before, _ = scrape(client)
    sqlite_store.claim_attempt("late", repo="acme/widgets", trigger="issue", status="fixed")
    after, _ = scrape(client)
    assert (
        one(after, "arcs_attempts_total", status="fixed")
        == one(before, "arcs_attempts_total", status="fixed") + 1
    )
