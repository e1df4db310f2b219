"""Crash recovery settings of the broker: ``ARCS_BROKER_REQUEUE_S`` reaches dramatiq's Redis broker.

The last test runs against the real Redis on 127.0.0.1:6379 (skipped, with the reason, when it
cannot be reached): a consumer that fetched a message and died gives it back to the next
consumer once its heartbeat is older than the deadline, and not before.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dramatiq
import pytest

from bot.errors import ConfigError
from bot.settings import Settings, load_settings
from jobs.broker import (
    DEFAULT_MAINTENANCE_CHANCE,
    MAINTENANCE_SCALE,
    close_broker,
    make_broker,
    make_message,
    redis_recovery_options,
)
from jobs.messages import JobRequest

REDIS_URL = "redis://127.0.0.1:6379/11"
NOWHERE = "redis://127.0.0.1:1/0"  # nothing listens: building a broker must not connect


def settings_for(tmp_path: Path, url: str | None, requeue: str | None = None) -> Settings:
    env = {"ARCS_HOME": str(tmp_path / "home"), "ARCS_EMBEDDER": "hash"}
    if url is not None:
        env["ARCS_BROKER_URL"] = url
    if requeue is not None:
        env["ARCS_BROKER_REQUEUE_S"] = requeue
    return load_settings(env)


def redis_built(settings: Settings) -> Any:
    broker: Any = make_broker(settings)
    try:
        return {
            "heartbeat_timeout": broker.heartbeat_timeout,
            "maintenance_chance": broker.maintenance_chance,
        }
    finally:
        close_broker(broker)


def test_the_default_deadline_reaches_the_redis_broker(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, NOWHERE)
    assert settings.broker_requeue_s == 120.0
    # 120 s without a heartbeat; then maintenance on ~1 in 12 polls (about 12 s of idle polling).
    assert redis_built(settings) == {"heartbeat_timeout": 120_000, "maintenance_chance": 83_334}


@pytest.mark.parametrize(
    ("requeue", "heartbeat", "chance"),
    [
        ("5", 5_000, MAINTENANCE_SCALE),  # short deadlines: check on every command
        ("10", 10_000, MAINTENANCE_SCALE),
        ("30.5", 30_500, 327_869),
        ("600", 600_000, 16_667),
        ("86400", 86_400_000, DEFAULT_MAINTENANCE_CHANCE),  # never below dramatiq's own default
    ],
)
def test_the_deadline_scales_the_maintenance(
    tmp_path: Path, requeue: str, heartbeat: int, chance: int
) -> None:
    assert redis_built(settings_for(tmp_path, NOWHERE, requeue)) == {
        "heartbeat_timeout": heartbeat,
        "maintenance_chance": chance,
    }


def test_expected_recovery_is_close_to_the_deadline() -> None:
    for requeue_s in (5.0, 60.0, 120.0, 900.0):
        options = redis_recovery_options(requeue_s)
        # One idle poll a second: the mean wait for a maintenance run after the deadline.
        mean_wait_s = MAINTENANCE_SCALE / options["maintenance_chance"]
        assert options["heartbeat_timeout"] == requeue_s * 1000
        assert mean_wait_s <= 0.1 * requeue_s + 1e-9 or mean_wait_s == 1.0


@pytest.mark.parametrize("requeue", ["0", "-5", "4.9", "nan", "inf", "1e9"])
def test_invalid_deadlines_are_a_config_error(tmp_path: Path, requeue: str) -> None:
    with pytest.raises(ConfigError, match="ARCS_BROKER_REQUEUE_S must be between 5 and 604800 seconds"):
        make_broker(settings_for(tmp_path, NOWHERE, requeue))


def test_other_brokers_ignore_the_redis_deadline(tmp_path: Path) -> None:
    # RabbitMQ redelivers on connection loss; the stub broker has no consumers that can die.
    for url in ("amqp://127.0.0.1:1/", None):
        broker = make_broker(settings_for(tmp_path, url, "1"))
        assert not hasattr(broker, "heartbeat_timeout")
        close_broker(broker)


# --- the real Redis ------------------------------------------------------------------------------


@pytest.fixture
def redis_settings(tmp_path: Path) -> Iterator[Settings]:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=2).close()
    except OSError as exc:
        pytest.skip(f"Redis on 127.0.0.1:6379 is unreachable ({exc})")
    settings = settings_for(tmp_path, REDIS_URL, "5")
    cleaner: Any = make_broker(settings)
    cleaner.flush_all()
    yield settings
    cleaner.flush_all()
    close_broker(cleaner)


def _fetch(broker: Any, queue: str, attempts: int = 3) -> dramatiq.MessageProxy | None:
    consumer = broker.consume(queue, prefetch=1, timeout=100)
    for _ in range(attempts):
        message = next(consumer)
        if message is not None:
            return message  # left unacknowledged, like a worker killed mid-job
    return None


def test_a_dead_consumers_message_comes_back_after_the_deadline(redis_settings: Settings) -> None:
    job = JobRequest("repair_issue", {"repo": "octo/app"}, context={}, idempotency_key="k")
    dead: Any = make_broker(redis_settings)
    dead.enqueue(make_message(job))
    taken = _fetch(dead, "arcs-repair")
    assert taken is not None and taken.actor_name == "repair_issue"

    heirs: Any = make_broker(redis_settings)
    try:
        # The first consumer still heartbeats (it just fetched): its message stays with it.
        assert _fetch(heirs, "arcs-repair") is None
        # Its last heartbeat becomes older than the 5 s deadline, as if it was killed back then.
        heartbeats = f"{dead.namespace}:__heartbeats__"
        stamp = dead.client.zscore(heartbeats, dead.broker_id)
        assert stamp is not None
        dead.client.zadd(heartbeats, {dead.broker_id: stamp - 6_000})
        again = _fetch(heirs, "arcs-repair")
        assert again is not None and again.message_id == taken.message_id
    finally:
        close_broker(heirs)
        close_broker(dead)
