"""Broker choice and the enqueuer: stub in-process, the real Redis and RabbitMQ on 127.0.0.1.

Redis (6379) and RabbitMQ (5672, guest/guest) tests are skipped, with the reason, only when the
server cannot be reached.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dramatiq
import pytest

from bot.errors import ConfigError
from bot.settings import Settings, load_settings
from jobs.broker import (
    QUEUES,
    BrokerEnqueuer,
    BrokerUnavailable,
    broker_kind,
    close_broker,
    make_broker,
    make_enqueuer,
)
from jobs.logctx import CONTEXT_OPTION, JobContextMiddleware
from jobs.messages import JobRequest

REDIS_URL = "redis://127.0.0.1:6379/15"
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
ROOT = Path(__file__).parents[2]


def _unreachable(port: int) -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return None
    except OSError as exc:
        return str(exc)


def with_broker(tmp_path: Path, url: str | None) -> Settings:
    env = {"ARCS_HOME": str(tmp_path / "home"), "ARCS_EMBEDDER": "hash"}
    if url is not None:
        env["ARCS_BROKER_URL"] = url
    return load_settings(env)


def job(actor: Any = "publish_result") -> JobRequest:
    return JobRequest(
        actor,
        {"repo": "octo/app", "attempt_id": 3},
        context={"delivery_id": "d-1", "repo": "octo/app", "installation_id": "7", "secret": "not carried"},
        idempotency_key="k",
    )


def test_nothing_is_set_up_at_import_time() -> None:
    code = (
        "import dramatiq.broker as b\n"
        "import jobs.broker, jobs.actors, jobs.worker, jobs.logctx, jobs.pipeline, bot.worker_wiring\n"
        "assert b.global_broker is None, b.global_broker\n"
        "print('clean')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        (None, "stub"),
        ("stub://", "stub"),
        ("redis://localhost:6379/0", "redis"),
        ("rediss://cache.example:6380/1", "redis"),
        ("amqp://guest:guest@localhost:5672/%2F", "rabbitmq"),
        ("amqps://mq.example/vhost", "rabbitmq"),
    ],
)
def test_the_url_scheme_chooses_the_broker(tmp_path: Path, url: str | None, kind: str) -> None:
    assert broker_kind(with_broker(tmp_path, url)) == kind


@pytest.mark.parametrize("url", ["kafka://localhost:9092", "http://localhost", "localhost:6379"])
def test_unknown_schemes_are_a_config_error(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError, match="ARCS_BROKER_URL: unsupported scheme"):
        make_broker(with_broker(tmp_path, url))


def test_brokers_are_built_without_connecting(tmp_path: Path) -> None:
    # Nothing listens on port 1: building must still succeed (connections open lazily).
    for url, name in (("redis://127.0.0.1:1/0", "RedisBroker"), ("amqp://127.0.0.1:1/", "RabbitmqBroker")):
        broker = make_broker(with_broker(tmp_path, url))
        assert type(broker).__name__ == name
        assert isinstance(broker.middleware[0], JobContextMiddleware)
        close_broker(broker)


def test_the_stub_enqueuer_routes_jobs_to_their_actor_queue(tmp_path: Path) -> None:
    enqueuer = make_enqueuer(with_broker(tmp_path, None))
    enqueuer.ping()
    for actor in QUEUES:
        enqueuer.enqueue(job(actor))
    broker: Any = enqueuer.broker
    assert type(broker).__name__ == "StubBroker"
    counts = {queue: broker.queues[queue].qsize() for queue in set(QUEUES.values())}
    # refresh_index, drop_index; publish_result, record_pr_outcome, watch_checks, refresh_dashboard
    assert counts == {"arcs-repair": 3, "arcs-index": 2, "arcs-github": 4}
    message = dramatiq.Message.decode(broker.queues["arcs-github"].get())
    assert message.actor_name in {"publish_result", "record_pr_outcome", "watch_checks", "refresh_dashboard"}
    assert list(message.args) == [job(message.actor_name).as_dict()]
    # Only the log context keys travel in the options.
    assert message.options[CONTEXT_OPTION] == {
        "delivery_id": "d-1",
        "repo": "octo/app",
        "installation_id": "7",
    }


def test_an_unknown_actor_is_rejected(tmp_path: Path) -> None:
    enqueuer = make_enqueuer(with_broker(tmp_path, None))
    with pytest.raises(ValueError, match="no actor named"):
        enqueuer.enqueue(job("make_coffee"))


def test_satisfies_the_web_enqueuer_port(tmp_path: Path) -> None:
    from bot.web.ports import Enqueuer

    assert isinstance(make_enqueuer(with_broker(tmp_path, None)), Enqueuer)


# --- Redis ---------------------------------------------------------------------------------------


@pytest.fixture
def redis_enqueuer(tmp_path: Path) -> Iterator[BrokerEnqueuer]:
    reason = _unreachable(6379)
    if reason is not None:
        pytest.skip(f"Redis on 127.0.0.1:6379 is unreachable ({reason})")
    enqueuer = make_enqueuer(with_broker(tmp_path, REDIS_URL))
    enqueuer.broker.flush_all()
    yield enqueuer
    enqueuer.broker.flush_all()
    enqueuer.close()


def _consume_one(broker: dramatiq.Broker, queue: str) -> Any:
    consumer = broker.consume(queue, timeout=1000)
    try:
        for _ in range(10):
            message = next(consumer)
            if message is not None:
                consumer.ack(message)
                return message
        raise AssertionError(f"no message on {queue}")
    finally:
        consumer.close()


def test_redis_round_trip_and_ping(redis_enqueuer: BrokerEnqueuer) -> None:
    redis_enqueuer.ping()
    redis_enqueuer.enqueue(job())
    message = _consume_one(redis_enqueuer.broker, "arcs-github")
    assert message.actor_name == "publish_result"
    assert message.args[0]["args"] == {"repo": "octo/app", "attempt_id": 3}
    assert message.options[CONTEXT_OPTION]["delivery_id"] == "d-1"


def test_redis_unreachable_raises_on_ping_and_enqueue(tmp_path: Path) -> None:
    enqueuer = make_enqueuer(with_broker(tmp_path, "redis://127.0.0.1:1/0"))
    with pytest.raises(BrokerUnavailable, match="broker unreachable"):
        enqueuer.ping()
    with pytest.raises(BrokerUnavailable, match="could not enqueue publish_result"):
        enqueuer.enqueue(job())
    enqueuer.close()


# --- RabbitMQ ------------------------------------------------------------------------------------


@pytest.fixture
def amqp_enqueuer(tmp_path: Path) -> Iterator[BrokerEnqueuer]:
    reason = _unreachable(5672)
    if reason is not None:
        pytest.skip(f"RabbitMQ on 127.0.0.1:5672 is unreachable ({reason})")
    enqueuer = make_enqueuer(with_broker(tmp_path, AMQP_URL))
    yield enqueuer
    for queue in set(QUEUES.values()):
        enqueuer.broker.flush(queue)
    enqueuer.close()


def test_rabbitmq_round_trip_and_ping(amqp_enqueuer: BrokerEnqueuer) -> None:
    amqp_enqueuer.ping()
    amqp_enqueuer.broker.flush("arcs-index")
    amqp_enqueuer.enqueue(job("refresh_index"))
    message = _consume_one(amqp_enqueuer.broker, "arcs-index")
    assert message.actor_name == "refresh_index"
    assert message.options[CONTEXT_OPTION]["repo"] == "octo/app"
    amqp_enqueuer.ping()


def test_rabbitmq_unreachable_raises_on_ping(tmp_path: Path) -> None:
    enqueuer = make_enqueuer(with_broker(tmp_path, "amqp://guest:guest@127.0.0.1:1/%2F"))
    with pytest.raises(BrokerUnavailable, match="broker unreachable"):
        enqueuer.ping()
    enqueuer.close()
