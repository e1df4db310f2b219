"""The only place a broker is chosen.

``ARCS_BROKER_URL`` decides: ``redis://`` / ``rediss://`` -> Redis (the default deployment),
``amqp://`` / ``amqps://`` -> RabbitMQ, unset or ``stub://`` -> dramatiq's in-process
:class:`~dramatiq.brokers.stub.StubBroker` (the CLI and unit tests). Nothing connects or touches
dramatiq's global broker at import time: :func:`make_broker` builds a broker (connections open
lazily), and only the worker makes it global (:func:`install_global`).

:func:`make_enqueuer` is what the web side gets: it sends each :class:`~jobs.messages.JobRequest`
to its actor's queue (:data:`QUEUES`) with the log context in the message options, and its
``ping`` checks the broker connection.

Crash recovery: a message is acknowledged only after its actor finished. With Redis, the
messages a worker had fetched but not acknowledged come back once that worker has stopped
heartbeating for ``ARCS_BROKER_REQUEUE_S`` (:func:`redis_recovery_options`); with RabbitMQ they
come back as soon as the worker's connection drops (see :func:`make_broker`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from jobs.logctx import CONTEXT_OPTION, DroppedJob, JobContextMiddleware, context_of
from jobs.messages import ActorName, JobRequest
from runners.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    import dramatiq

QUEUES: Mapping[ActorName, str] = {
    "repair_ci_failure": "arcs-repair",
    "repair_issue": "arcs-repair",
    "handle_command": "arcs-repair",
    "refresh_index": "arcs-index",
    "drop_index": "arcs-index",
    "publish_result": "arcs-github",
    "record_pr_outcome": "arcs-github",
    "watch_checks": "arcs-github",
    "refresh_dashboard": "arcs-github",
}
"""Queue of each actor: long repairs, index refreshes and quick GitHub writes do not wait on
each other (a worker can also be started for some queues only)."""

REDIS_CONNECT_TIMEOUT_S = 5.0
AMQP_CONNECT_TIMEOUT_S = 5.0

MIN_REQUEUE_S = 5.0
"""The shortest ``ARCS_BROKER_REQUEUE_S``. A live worker refreshes its heartbeat with every
fetch, about once a second (its delay-queue consumers keep fetching while all threads are busy),
so a deadline of a second or two could hand a busy worker's messages out twice after a stall."""
MAX_REQUEUE_S = 7 * 24 * 3600.0
FETCHES_PER_S = 1.0
"""How often an idle dramatiq consumer polls its queue (its ``worker_timeout``, 1 s by default)."""
MAINTENANCE_SHARE = 0.1
"""dramatiq's Redis broker requeues a dead worker's messages during "maintenance", which runs
on a random share of the commands sent for that queue. It is scaled so that, once the deadline
has passed, maintenance comes on average within this fraction of the deadline."""
DEFAULT_MAINTENANCE_CHANCE = 1000
MAINTENANCE_SCALE = 1_000_000


DEFAULT_REQUEUE_S = 120.0
"""``ARCS_BROKER_REQUEUE_S``'s default (see :func:`redis_recovery_options`)."""


class BrokerUnavailable(ConnectionError):
    """The broker cannot be reached or did not accept a message (the web side answers 503)."""


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """Which broker to use and how (built by the edge from ``ARCS_BROKER_*``)."""

    url: str | None = None
    """``ARCS_BROKER_URL``: ``redis://…``, ``amqp://…``, or unset/``stub://`` (in-process)."""
    requeue_s: float = DEFAULT_REQUEUE_S
    """``ARCS_BROKER_REQUEUE_S`` (Redis): when a dead worker's messages are redelivered."""

    @classmethod
    def of(cls, settings: BrokerSettings) -> BrokerConfig:
        """The configuration ``settings`` give (``bot.settings.Settings`` conforms)."""
        return cls(url=settings.broker_url, requeue_s=settings.broker_requeue_s)


class BrokerSettings(Protocol):
    """The settings fields a :class:`BrokerConfig` is built from (read structurally: jobs does not
    import ``bot``)."""

    @property
    def broker_url(self) -> str | None:
        """``ARCS_BROKER_URL``."""
        ...

    @property
    def broker_requeue_s(self) -> float:
        """``ARCS_BROKER_REQUEUE_S``."""
        ...


BrokerConfigLike = BrokerConfig | BrokerSettings
"""A :class:`BrokerConfig`, or settings to build one from (the web side and ``arcs doctor`` pass theirs)."""


def as_broker_config(value: BrokerConfigLike) -> BrokerConfig:
    """``value`` itself, or the configuration its settings give."""
    return value if isinstance(value, BrokerConfig) else BrokerConfig.of(value)


def broker_kind(config: BrokerConfigLike) -> str:
    """``redis``, ``rabbitmq`` or ``stub`` for the broker URL (``ConfigError`` otherwise)."""
    url = (as_broker_config(config).url or "").strip()
    if not url:
        return "stub"
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("redis", "rediss", "unix"):
        return "redis"
    if scheme in ("amqp", "amqps"):
        return "rabbitmq"
    if scheme == "stub":
        return "stub"
    raise ConfigError(
        f"ARCS_BROKER_URL: unsupported scheme {scheme + '://' if scheme else url!r} "
        "(use redis://, amqp:// or stub://)"
    )


def redis_recovery_options(requeue_s: float) -> dict[str, int]:
    """dramatiq ``RedisBroker`` options for redelivering a dead worker's messages after ``requeue_s``.

    ``heartbeat_timeout`` (ms): how long a worker may go without heartbeating before its
    unacknowledged messages are requeued (dramatiq's default is 60 s, but it checks so rarely
    that in practice recovery takes much longer). ``maintenance_chance`` (per million
    commands): raised so the check runs about every ``MAINTENANCE_SHARE * requeue_s`` seconds of
    an idle consumer's polling, never below dramatiq's default. A :class:`ConfigError` names
    ``ARCS_BROKER_REQUEUE_S`` when it is not a number of seconds in
    [``MIN_REQUEUE_S``, ``MAX_REQUEUE_S``].
    """
    if not (math.isfinite(requeue_s) and MIN_REQUEUE_S <= requeue_s <= MAX_REQUEUE_S):
        raise ConfigError(
            f"ARCS_BROKER_REQUEUE_S must be between {MIN_REQUEUE_S:g} and {MAX_REQUEUE_S:g} seconds, "
            f"got {requeue_s!r}"
        )
    commands_per_check = MAINTENANCE_SHARE * requeue_s * FETCHES_PER_S
    chance = math.ceil(MAINTENANCE_SCALE / max(commands_per_check, 1.0))
    return {
        "heartbeat_timeout": round(requeue_s * 1000),
        "maintenance_chance": min(MAINTENANCE_SCALE, max(DEFAULT_MAINTENANCE_CHANCE, chance)),
    }


def make_broker(
    config: BrokerConfigLike,
    *,
    on_failure: Callable[[DroppedJob], None] | None = None,
    timeout_s: float | None = None,
) -> dramatiq.Broker:
    """Build the broker ``config.url`` names, with ARCS's middleware; connects lazily.

    ``on_failure`` receives every message that is dropped (retries exhausted, too old).
    ``timeout_s`` bounds connecting and every read or write on the broker's sockets (the web
    process: a stalled Redis must not hold a webhook answer); ``None`` keeps the defaults.

    Redis: a message a worker fetched and never acknowledged (the worker was SIGKILLed, its host
    vanished) is redelivered ``config.requeue_s`` seconds after the worker's last
    heartbeat (:func:`redis_recovery_options`). RabbitMQ needs no such tuning: unacknowledged
    messages return to their queue as soon as the consumer's connection (or channel) closes,
    which the server notices at once for a killed process and through the AMQP heartbeat for a
    lost host. (RabbitMQ's own ``consumer_timeout``, 30 min by default, bounds how long a
    delivery may stay unacknowledged: the server closes the channel and requeues it.)
    """
    config = as_broker_config(config)
    kind = broker_kind(config)
    url = (config.url or "").strip()
    broker: dramatiq.Broker
    if kind == "redis":
        import redis
        from dramatiq.brokers.redis import RedisBroker

        recovery = redis_recovery_options(config.requeue_s)
        timeouts: dict[str, float] = {"socket_connect_timeout": REDIS_CONNECT_TIMEOUT_S}
        if timeout_s is not None:
            timeouts = {
                "socket_connect_timeout": min(timeout_s, REDIS_CONNECT_TIMEOUT_S),
                "socket_timeout": timeout_s,
            }
        pool = redis.ConnectionPool.from_url(url, **timeouts)
        broker = RedisBroker(connection_pool=pool, **recovery)  # type: ignore[no-untyped-call]
    elif kind == "rabbitmq":
        try:
            import pika  # type: ignore[import-untyped]
            from dramatiq.brokers.rabbitmq import RabbitmqBroker
        except ImportError as exc:  # pragma: no cover - pika is a dependency
            raise ConfigError(f"ARCS_BROKER_URL is amqp:// but pika is not installed ({exc})") from None
        # confirm_delivery: enqueue returns only once RabbitMQ has the message.
        broker = RabbitmqBroker(url=url, confirm_delivery=True)
        params: Any = broker.parameters
        for one in params if isinstance(params, list) else [params]:
            if isinstance(one, pika.URLParameters) and "socket_timeout" not in url:
                one.socket_timeout = AMQP_CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
            if isinstance(one, pika.URLParameters) and timeout_s is not None:
                one.blocked_connection_timeout = timeout_s
    else:
        from dramatiq.brokers.stub import StubBroker

        broker = StubBroker()
    # First in the chain: its "before" hooks run first and its "after" hooks last (after
    # Retries has decided whether the message is dropped).
    broker.middleware.insert(0, JobContextMiddleware(on_failure))
    for queue in sorted(set(QUEUES.values())):
        broker.declare_queue(queue)
    return broker


def install_global(broker: dramatiq.Broker) -> None:
    """Make ``broker`` dramatiq's global broker (the worker does this, once, at start-up)."""
    import dramatiq

    dramatiq.set_broker(broker)


def close_broker(broker: dramatiq.Broker) -> None:
    """Close ``broker`` and its connections (dramatiq's Redis broker leaves its pool open)."""
    broker.close()
    client = getattr(broker, "client", None)
    if client is not None:
        client.close()
        client.connection_pool.disconnect()


def ping_broker(broker: dramatiq.Broker) -> None:
    """Return when the broker answers; raise :class:`BrokerUnavailable` otherwise."""
    name = type(broker).__name__
    try:
        if name == "RedisBroker":
            broker.client.ping()  # type: ignore[attr-defined]
        elif name == "RabbitmqBroker":
            connection: Any = broker.connection  # type: ignore[attr-defined]
            if not connection.is_open:
                raise ConnectionError("connection closed")
            connection.process_data_events(time_limit=0)
    except BrokerUnavailable:
        raise
    except Exception as exc:
        if name == "RabbitmqBroker":
            # Drop the broken per-thread connection so the next call reconnects.
            try:
                del broker.connection  # type: ignore[attr-defined]
            except Exception:
                pass
        raise BrokerUnavailable(f"broker unreachable: {type(exc).__name__}: {exc}"[:300]) from exc


def queue_depth(broker: dramatiq.Broker) -> int | None:
    """Messages waiting in the broker's queues (ready, not held by a worker, not delayed), or
    ``None`` when the broker offers no cheap count (RabbitMQ)."""
    name = type(broker).__name__
    b: Any = broker
    ready = sorted(q for q in b.queues if not q.endswith(".DQ"))
    if name == "RedisBroker":
        return sum(int(b.client.llen(f"{b.namespace}:{q}")) for q in ready)
    if name == "StubBroker":
        return sum(int(b.queues[q].qsize()) for q in ready)
    return None


def make_message(job: JobRequest) -> dramatiq.Message[Any]:
    """The dramatiq message for ``job``: the job as the single argument, context in the options."""
    import dramatiq

    return dramatiq.Message(
        queue_name=QUEUES[job.actor],
        actor_name=job.actor,
        args=(job.as_dict(),),
        kwargs={},
        options={CONTEXT_OPTION: context_of(job)},
    )


class BrokerEnqueuer:
    """Sends job requests to their actors' queues (satisfies ``bot.web.ports.Enqueuer``)."""

    def __init__(self, broker: dramatiq.Broker) -> None:
        self.broker = broker

    def enqueue(self, job: JobRequest) -> None:
        """Send one job; raise :class:`BrokerUnavailable` when the broker does not take it."""
        if job.actor not in QUEUES:
            raise ValueError(f"no actor named {job.actor!r}")
        try:
            self.broker.enqueue(make_message(job))
        except Exception as exc:
            raise BrokerUnavailable(
                f"could not enqueue {job.actor}: {type(exc).__name__}: {exc}"[:300]
            ) from exc

    def ping(self) -> None:
        """Return when the broker answers; raise :class:`BrokerUnavailable` otherwise."""
        ping_broker(self.broker)

    def enqueue_later(self, job: JobRequest, delay: dt.timedelta) -> None:
        """Send one job to be delivered after ``delay`` (dramatiq delays natively: Redis keeps it
        in the delay queue; RabbitMQ in the consuming worker, unacknowledged, until it is due)."""
        if job.actor not in QUEUES:
            raise ValueError(f"no actor named {job.actor!r}")
        try:
            self.broker.enqueue(make_message(job), delay=max(0, int(delay.total_seconds() * 1000)))
        except Exception as exc:
            raise BrokerUnavailable(
                f"could not enqueue {job.actor}: {type(exc).__name__}: {exc}"[:300]
            ) from exc

    def queue_depth(self) -> int | None:
        """Messages waiting to be worked on (``None``: this broker cannot tell cheaply)."""
        return queue_depth(self.broker)

    def close(self) -> None:
        """Close the broker's connections."""
        close_broker(self.broker)


def make_enqueuer(config: BrokerConfigLike, *, timeout_s: float | None = None) -> BrokerEnqueuer:
    """The web side's enqueuer for the configured broker (``timeout_s``: see :func:`make_broker`)."""
    return BrokerEnqueuer(make_broker(config, timeout_s=timeout_s))
