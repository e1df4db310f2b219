"""No acknowledged delivery is lost, every answer is bounded: a real ``arcs serve`` (gunicorn +
uvicorn workers) killed with SIGKILL between recording a delivery and enqueueing its jobs, and its
broker or database refusing, hanging or down at boot. Every delivery ends with exactly one job in
the queue, by the relay or by GitHub's redelivery.

The broker and the database are reached through :class:`~tests.bot.intake_support.TcpPlug`, a
loopback port that forwards, refuses or accepts and never answers. ``ARCS_TEST_CODE_ROOT`` runs
the server from another tree (a worktree of older code) to show these tests fail there.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from bot.store.store import normalize_url
from tests.bot.intake_support import (
    REDIS_URL,
    Serve,
    TcpPlug,
    flush_redis,
    post,
    queued_jobs,
    signed,
    wait_for,
)
from tests.conftest import CreateDb

pytestmark = pytest.mark.slow

REDIS = ("127.0.0.1", 6379)
PG = ("127.0.0.1", 5432)


@pytest.fixture
def plugs() -> Iterator[list[TcpPlug]]:
    made: list[TcpPlug] = []
    yield made
    for plug in made:
        plug.close()


@pytest.fixture
def servers() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for server in started:
        server.stop()


@pytest.fixture(autouse=True)
def _clean_redis() -> Iterator[None]:
    flush_redis()
    yield
    flush_redis()


def broker_url(plug: TcpPlug) -> str:
    return f"redis://127.0.0.1:{plug.port}/11"


def delivery_row(url: str, delivery_id: str) -> Any:
    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            return conn.execute(
                text("SELECT status FROM deliveries WHERE delivery_id = :d"), {"d": delivery_id}
            ).first()
    except Exception:
        return None
    finally:
        engine.dispose()


def start(servers: list[Serve], home: Path, env: dict[str, str], **kw: Any) -> Serve:
    server = Serve(home, env, **kw)
    servers.append(server)
    return server


def background_post(base: str, stem: str, delivery: str) -> threading.Thread:
    def send() -> None:
        try:
            post(base, stem, delivery, timeout=60)
        except httpx.HTTPError:
            pass  # the server is killed under this request

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def kill_between_record_and_enqueue(
    servers: list[Serve], plugs: list[TcpPlug], tmp_path: Path, delivery: str
) -> tuple[dict[str, str], TcpPlug]:
    """Record a delivery with the broker hanging, then SIGKILL the whole server."""
    broker = TcpPlug(REDIS, "hang")
    plugs.append(broker)
    db = f"sqlite:///{tmp_path / 'arcs.db'}"
    env = {
        "ARCS_DATABASE_URL": db,
        "ARCS_BROKER_URL": broker_url(broker),
        "ARCS_BROKER_TIMEOUT_S": "60",  # the enqueue hangs until the kill
        "ARCS_RELAY_GRACE_S": "1",
        "ARCS_RELAY_INTERVAL_S": "3600",
    }
    first = start(servers, tmp_path / "home", env)
    base = first.url()
    sender = background_post(base, "issues.labeled", delivery)
    wait_for(lambda: delivery_row(db, delivery) is not None, 30, "the delivery row")
    time.sleep(0.5)  # well inside the hanging enqueue
    first.kill()
    sender.join(10)
    assert queued_jobs(delivery) == []
    broker.set("forward")
    return env, broker


def test_killed_between_record_and_enqueue_the_relay_enqueues_it_once(
    servers: list[Serve], plugs: list[TcpPlug], tmp_path: Path
) -> None:
    env, _ = kill_between_record_and_enqueue(servers, plugs, tmp_path, "kill-relay")
    second = start(servers, tmp_path / "home", {**env, "ARCS_RELAY_INTERVAL_S": "0.3"})
    base = second.url()
    # No redelivery: the relay finds the row the broker never confirmed and enqueues it.
    wait_for(lambda: len(queued_jobs("kill-relay")) >= 1, 30, "the relay to enqueue the job")
    # The relay marks the row after the broker took the job (relay.sweep): wait for the mark.
    wait_for(
        lambda: delivery_row(env["ARCS_DATABASE_URL"], "kill-relay").status == "enqueued",
        10,
        "the relay to mark the delivery enqueued",
    )
    again = post(base, "issues.labeled", "kill-relay")
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    time.sleep(2.5)  # more than the grace and several relay rounds: nothing is enqueued twice
    assert [job["actor"] for job in queued_jobs("kill-relay")] == ["repair_issue"]


def test_killed_between_record_and_enqueue_a_redelivery_enqueues_it_once(
    servers: list[Serve], plugs: list[TcpPlug], tmp_path: Path
) -> None:
    env, _ = kill_between_record_and_enqueue(servers, plugs, tmp_path, "kill-redeliver")
    second = start(servers, tmp_path / "home", env)  # its relay does not scan during the test
    base = second.url()
    time.sleep(1.2)  # past the grace: the recording request is certainly gone
    reply = post(base, "issues.labeled", "kill-redeliver")  # GitHub's "Redeliver"
    assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.text
    assert post(base, "issues.labeled", "kill-redeliver").json()["status"] == "duplicate"
    assert [job["actor"] for job in queued_jobs("kill-redeliver")] == ["repair_issue"]


def test_broker_down_then_back_the_relay_enqueues_once(
    servers: list[Serve], plugs: list[TcpPlug], tmp_path: Path
) -> None:
    broker = TcpPlug(REDIS, "refuse")
    plugs.append(broker)
    env = {
        "ARCS_DATABASE_URL": f"sqlite:///{tmp_path / 'arcs.db'}",
        "ARCS_BROKER_URL": broker_url(broker),
        "ARCS_RELAY_GRACE_S": "1",
        "ARCS_RELAY_INTERVAL_S": "0.3",
    }
    base = start(servers, tmp_path / "home", env).url()
    reply = post(base, "issues.labeled", "broker-down")
    assert reply.status_code == 202 and reply.json()["status"] == "recorded", reply.text
    broker.set("forward")
    wait_for(lambda: len(queued_jobs("broker-down")) >= 1, 30, "the relay to enqueue the job")
    time.sleep(2.5)
    assert post(base, "issues.labeled", "broker-down").json()["status"] == "duplicate"
    assert len(queued_jobs("broker-down")) == 1


def test_a_stalled_broker_gets_a_bounded_answer_and_the_job_once(
    servers: list[Serve], plugs: list[TcpPlug], tmp_path: Path
) -> None:
    broker = TcpPlug(REDIS, "forward")
    plugs.append(broker)
    env = {
        "ARCS_DATABASE_URL": f"sqlite:///{tmp_path / 'arcs.db'}",
        "ARCS_BROKER_URL": broker_url(broker),
        "ARCS_RELAY_GRACE_S": "1",
        "ARCS_RELAY_INTERVAL_S": "0.3",
    }
    base = start(servers, tmp_path / "home", env).url()
    assert post(base, "issues.labeled", "warm").json()["status"] == "queued"
    broker.set("hang")
    began = time.monotonic()
    reply = post(base, "issues.labeled", "stalled")
    assert time.monotonic() - began < 5.0  # GitHub waits 10 s; we answer within 5
    assert reply.status_code == 202 and reply.json()["status"] == "recorded", reply.text
    broker.set("forward")
    wait_for(lambda: len(queued_jobs("stalled")) >= 1, 30, "the relay to enqueue the job")
    time.sleep(2.5)
    assert post(base, "issues.labeled", "stalled").json()["status"] == "duplicate"
    assert len(queued_jobs("stalled")) == 1


# --- the database ----------------------------------------------------------------------------


@pytest.mark.postgres
def test_database_down_at_boot_serves_503_then_recovers(
    servers: list[Serve], plugs: list[TcpPlug], tmp_path: Path, pg_create_db: CreateDb
) -> None:
    url = pg_create_db()
    database = TcpPlug(PG, "refuse")
    plugs.append(database)
    proxied = url.replace("127.0.0.1:5432", f"127.0.0.1:{database.port}")
    base = start(
        servers, tmp_path / "home", {"ARCS_DATABASE_URL": proxied, "ARCS_BROKER_URL": REDIS_URL}
    ).url()
    assert httpx.get(f"{base}/healthz").status_code == 200
    ready = httpx.get(f"{base}/readyz", timeout=10)
    assert ready.status_code == 503 and ready.json()["checks"]["database"] != "ok"
    began = time.monotonic()
    reply = post(base, "issues.labeled", "boot-1")
    assert time.monotonic() - began < 5.0
    assert reply.status_code == 503 and queued_jobs("boot-1") == []

    database.set("forward")
    wait_for(lambda: httpx.get(f"{base}/readyz", timeout=10).status_code == 200, 30, "ready")
    reply = post(base, "issues.labeled", "boot-1")  # the redelivery of the refused one
    assert reply.status_code == 202 and reply.json()["status"] == "queued", reply.text
    assert len(queued_jobs("boot-1")) == 1


@pytest.mark.postgres
def test_a_hanging_database_gets_503_within_5_s_and_nothing_half_done(
    servers: list[Serve], plugs: list[TcpPlug], tmp_path: Path, pg_create_db: CreateDb
) -> None:
    url = pg_create_db()
    database = TcpPlug(PG, "forward")
    plugs.append(database)
    proxied = url.replace("127.0.0.1:5432", f"127.0.0.1:{database.port}")
    base = start(
        servers, tmp_path / "home", {"ARCS_DATABASE_URL": proxied, "ARCS_BROKER_URL": REDIS_URL}
    ).url()
    assert post(base, "issues.labeled", "before").json()["status"] == "queued"

    database.set("hang")  # accepts connections, never answers; open ones are cut
    for delivery in ("hang-1", "hang-2"):
        began = time.monotonic()
        reply = post(base, "issues.labeled", delivery)
        assert time.monotonic() - began < 5.0
        assert reply.status_code == 503, reply.text
        assert queued_jobs(delivery) == []
    ready = httpx.get(f"{base}/readyz", timeout=10)
    assert ready.status_code == 503

    database.set("forward")
    wait_for(lambda: post(base, "issues.labeled", "hang-1").status_code != 503, 30, "recovery")
    assert delivery_row(url, "hang-1").status == "enqueued" or len(queued_jobs("hang-1")) == 1
    assert len(queued_jobs("hang-1")) == 1


@pytest.mark.postgres
def test_a_locked_deliveries_table_gets_503_within_5_s(
    servers: list[Serve], tmp_path: Path, pg_create_db: CreateDb
) -> None:
    url = pg_create_db()
    base = start(servers, tmp_path / "home", {"ARCS_DATABASE_URL": url, "ARCS_BROKER_URL": REDIS_URL}).url()
    assert post(base, "issues.labeled", "before").json()["status"] == "queued"
    engine = create_engine(normalize_url(url))
    try:
        with engine.connect() as holder:
            holder.execute(text("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE"))
            began = time.monotonic()
            reply = post(base, "issues.labeled", "locked")
            elapsed = time.monotonic() - began
            holder.rollback()
        assert elapsed < 5.0
        assert reply.status_code == 503 and queued_jobs("locked") == []
        again = post(base, "issues.labeled", "locked")
        assert again.status_code == 202 and again.json()["status"] == "queued", again.text
        assert len(queued_jobs("locked")) == 1
    finally:
        engine.dispose()


# --- bodies ----------------------------------------------------------------------------------


def raw_request(port: int, length: int, first: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = (
        f"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"X-GitHub-Event: ping\r\nX-GitHub-Delivery: slow\r\nX-Hub-Signature-256: sha256={'0' * 64}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()
    sock.sendall(head + first)
    return sock


def status_of(sock: socket.socket) -> int:
    data = sock.recv(4096)
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0


def test_a_trickled_body_is_cut_at_the_read_timeout(servers: list[Serve], tmp_path: Path) -> None:
    server = start(
        servers,
        tmp_path / "home",
        {"ARCS_DATABASE_URL": f"sqlite:///{tmp_path / 'arcs.db'}", "ARCS_WEBHOOK_READ_TIMEOUT_S": "1"},
    )
    server.url()
    assert server.port is not None
    sock = raw_request(server.port, 1000, b"{")
    try:
        sock.settimeout(6)
        for _ in range(3):  # a byte now and then: never finishing
            time.sleep(0.4)
            try:
                sock.sendall(b" ")
            except OSError:
                break
        assert status_of(sock) == 408
    finally:
        sock.close()


def test_unverified_bodies_in_flight_are_capped(servers: list[Serve], tmp_path: Path) -> None:
    server = start(
        servers,
        tmp_path / "home",
        {
            "ARCS_DATABASE_URL": f"sqlite:///{tmp_path / 'arcs.db'}",
            "ARCS_WEBHOOK_BODY_BUDGET_MB": "1",
            "ARCS_WEBHOOK_READ_TIMEOUT_S": "20",
        },
    )
    server.url()
    assert server.port is not None
    holder = raw_request(server.port, 2_000_000, b" " * 800_000)  # 0.8 MB held, never finished
    try:
        time.sleep(1.0)
        second = raw_request(server.port, 2_000_000, b" " * 400_000)
        try:
            second.settimeout(6)
            assert status_of(second) == 503
        finally:
            second.close()
    finally:
        holder.close()
    # The budget is given back: a normal delivery goes through.
    body, hdrs = signed("ping", "after-budget")
    reply = httpx.post(f"{server.url()}/webhooks/github", content=body, headers=hdrs, timeout=10)
    assert reply.status_code == 202, reply.text


# --- dashboard sessions across workers --------------------------------------------------------


def test_dashboard_logins_work_whichever_worker_answers(servers: list[Serve], tmp_path: Path) -> None:
    closed = TcpPlug(("127.0.0.1", 9), "refuse")  # GitHub "unreachable": a state that passes gets 502
    env = {
        "ARCS_DATABASE_URL": f"sqlite:///{tmp_path / 'arcs.db'}",
        "ARCS_CLIENT_ID": "Iv1.test",
        "ARCS_CLIENT_SECRET": "client-secret",
        "ARCS_GITHUB_WEB_URL": f"http://127.0.0.1:{closed.port}",
    }
    server = start(servers, tmp_path / "home", env, workers=2)
    base = server.url()
    answers: list[int] = []
    for _ in range(30):
        with httpx.Client(base_url=base, timeout=15) as login:  # a new connection each time
            start_reply = login.get("/login", params={"next": "/"})
            assert start_reply.status_code in (302, 303, 307), start_reply.text
            state = httpx.URL(start_reply.headers["location"]).params["state"]
            cookies = dict(login.cookies)
        with httpx.Client(base_url=base, timeout=15, cookies=cookies) as callback:
            answers.append(callback.get("/login/callback", params={"code": "c", "state": state}).status_code)
    # 400 is "bad state": the cookie signed by one worker was not readable by the other.
    assert 400 not in answers, answers
    key = tmp_path / "home" / "session.key"
    assert key.is_file() and key.stat().st_mode & 0o777 == 0o600


# --- the web process's async enqueue (bot.web.redis_intake) ---------------------------------


def test_the_async_enqueue_writes_what_dramatiq_writes_and_a_worker_runs_it(tmp_path: Path) -> None:
    import json

    import dramatiq
    import redis
    from dramatiq.brokers.redis import RedisBroker

    from bot.settings import load_settings
    from bot.web.redis_intake import AsyncRedisSender
    from jobs.broker import QUEUES, make_enqueuer
    from jobs.messages import JobRequest

    settings = load_settings({"ARCS_HOME": str(tmp_path), "ARCS_BROKER_URL": REDIS_URL})
    enqueuer = make_enqueuer(settings, timeout_s=2.0)
    sender = AsyncRedisSender.for_enqueuer(enqueuer)
    assert sender is not None

    def job(delivery: str) -> JobRequest:
        return JobRequest("repair_issue", {"repo": "o/r", "issue": 7}, {"delivery_id": delivery}, delivery)

    enqueuer.enqueue(job("by-dramatiq"))

    async def send() -> list[BaseException | None]:
        try:
            return await sender.send([[job("async-1")], [job("async-2"), job("async-3")]])
        finally:
            await sender.aclose()

    assert asyncio.run(send()) == [None, None]
    enqueuer.close()

    client = redis.Redis.from_url(REDIS_URL)
    queue = QUEUES["repair_issue"]
    try:
        ids = [m.decode() if isinstance(m, bytes) else m for m in client.lrange(f"dramatiq:{queue}", 0, -1)]
        stored = {i: json.loads(client.hget(f"dramatiq:{queue}.msgs", i) or b"null") for i in ids}
    finally:
        client.close()
    assert len(ids) == 4 and all(stored.values())  # in the queue's list and its message hash

    def shape(message: dict[str, Any]) -> dict[str, Any]:
        # Everything but the ids, the time and the job's own delivery (each job has its own).
        options = {
            k: v for k, v in message["options"].items() if k not in ("redis_message_id", "arcs_context")
        }
        rest = {k: v for k, v in message.items() if k not in ("message_id", "message_timestamp", "options")}
        job = {**message["args"][0], "context": {}, "idempotency_key": None}
        return {**rest, "options": {**options, "keys": sorted(message["options"])}, "args": [job]}

    reference, *ours = stored.values()
    assert [shape(m) for m in ours] == [shape(reference)] * 3  # same fields, same values
    assert all(i == m["options"]["redis_message_id"] for i, m in stored.items())

    # A real dramatiq worker takes them all.
    consumer = RedisBroker(url=REDIS_URL)  # type: ignore[no-untyped-call]
    seen: list[str] = []
    done = threading.Event()

    def repair_issue(job: dict[str, Any]) -> None:
        seen.append(job["idempotency_key"])
        if len(seen) == 4:
            done.set()

    dramatiq.actor(actor_name="repair_issue", queue_name=queue, broker=consumer, max_retries=0)(repair_issue)
    worker = dramatiq.Worker(consumer, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        assert done.wait(30), f"the worker ran only {seen}"
    finally:
        worker.stop()
        consumer.close()
    assert sorted(seen) == ["async-1", "async-2", "async-3", "by-dramatiq"]
