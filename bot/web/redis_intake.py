"""The webhook intake's enqueue on Redis, from the event loop (``redis.asyncio``), in dramatiq's format.

dramatiq's :class:`~dramatiq.brokers.redis.RedisBroker` is synchronous: each enqueue is a round
trip on a blocking socket, so the web process had to do it in a thread. This sends a whole batch
of messages in one pipelined round trip from the event loop, writing exactly what
``RedisBroker.enqueue`` writes: the message copied with a fresh ``redis_message_id``, the broker's
``before_enqueue``/``after_enqueue`` middleware hooks run, and its ``dispatch`` Lua script called
with the same arguments (``enqueue``, timestamp, queue, broker id, heartbeat timeout, dead-message
TTL, maintenance flag, unpack size, message id, encoded message). The broker object built by
:func:`jobs.broker.make_broker` supplies all of them, and its connection settings (address,
database, credentials, the connect and socket timeouts that bound the answer).

Used only for a :class:`jobs.broker.BrokerEnqueuer` over a ``RedisBroker`` on a plain TCP
connection; anything else (RabbitMQ, the stub broker, TLS or a Unix socket) keeps the
synchronous enqueuer, run in a thread by the intake.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import redis
import redis.asyncio
import redis.exceptions
from dramatiq.common import current_millis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from jobs.messages import JobRequest

_CLIENT_SETTINGS = (
    "host",
    "port",
    "db",
    "username",
    "password",
    "socket_timeout",
    "socket_connect_timeout",
    "client_name",
)


class AsyncRedisSender:
    """Enqueues job batches on dramatiq's Redis broker from the event loop."""

    def __init__(self, broker: Any, client: redis.asyncio.Redis) -> None:
        self.broker = broker
        self.client = client
        script = broker.scripts["dispatch"]
        self._script_text: str = script.script
        self._sha: str = script.sha
        self._unpack: int | None = None

    @classmethod
    def for_enqueuer(cls, enqueuer: object) -> AsyncRedisSender | None:
        """A sender for ``enqueuer``'s broker when it is dramatiq's Redis broker over TCP, else ``None``."""
        from jobs.broker import BrokerEnqueuer

        if not isinstance(enqueuer, BrokerEnqueuer) or type(enqueuer.broker).__name__ != "RedisBroker":
            return None
        broker: Any = enqueuer.broker
        pool = broker.client.connection_pool
        if pool.connection_class is not redis.Connection:
            return None
        settings = {k: pool.connection_kwargs[k] for k in _CLIENT_SETTINGS if k in pool.connection_kwargs}
        # One retry, on a connection that turned out closed (Redis restarted, an idle timeout);
        # never after a timeout: the batch then fails within the socket timeout and the relay
        # owns its jobs, where a late retry would enqueue them a second time.
        retry = Retry(NoBackoff(), 1, supported_errors=(redis.exceptions.ConnectionError,))
        return cls(broker, redis.asyncio.Redis(**settings, retry=retry))

    async def send(self, batches: Sequence[Sequence[JobRequest]]) -> list[BaseException | None]:
        """Enqueue every batch's jobs in one pipelined round trip; per batch ``None`` when the
        broker took all its jobs, else the error (a connection failure fails them all)."""
        from jobs.broker import QUEUES, BrokerUnavailable, make_message

        outcome: list[BaseException | None] = [None] * len(batches)
        messages: list[tuple[int, Any]] = []
        for index, jobs in enumerate(batches):
            for job in jobs:
                if job.actor not in QUEUES:
                    outcome[index] = ValueError(f"no actor named {job.actor!r}")
                    break
                message = make_message(job).copy(options={"redis_message_id": str(uuid.uuid4())})
                self.broker.emit_before("enqueue", message, None)
                messages.append((index, message))
        messages = [(i, m) for i, m in messages if outcome[i] is None]
        if not messages:
            return outcome
        try:
            results = await self._dispatch([m for _, m in messages])
        except Exception as exc:
            error = BrokerUnavailable(f"could not enqueue: {type(exc).__name__}: {exc}"[:300])
            for index, _ in messages:
                outcome[index] = error
            return outcome
        for (index, _), result in zip(messages, results, strict=True):
            if isinstance(result, BaseException) and outcome[index] is None:
                outcome[index] = BrokerUnavailable(f"could not enqueue: {result!r}"[:300])
        for index, message in messages:
            if outcome[index] is None:
                self.broker.emit_after("enqueue", message, None)
        return outcome

    async def _dispatch(self, messages: Sequence[Any]) -> list[Any]:
        if self._unpack is None:
            # dramatiq asks Redis once per process (a sync call; cached on the broker's class).
            self._unpack = int(await asyncio.to_thread(self.broker._max_unpack_size))
        results = await self._pipeline(messages)
        missing = [i for i, r in enumerate(results) if isinstance(r, redis.exceptions.NoScriptError)]
        if missing:
            # The script is not cached on this server (a restart, SCRIPT FLUSH): a failed EVALSHA
            # did nothing, so load it and send those messages again.
            await self.client.script_load(self._script_text)
            again = await self._pipeline([messages[i] for i in missing])
            for i, result in zip(missing, again, strict=True):
                results[i] = result
        return results

    async def _pipeline(self, messages: Sequence[Any]) -> list[Any]:
        broker = self.broker
        unpack = self._unpack or 0  # set by _dispatch before any pipeline
        pipe = self.client.pipeline(transaction=False)
        timestamp = current_millis()
        for message in messages:
            pipe.evalsha(
                self._sha,
                1,
                broker.namespace,
                "enqueue",
                timestamp,
                message.queue_name,
                broker.broker_id,
                broker.heartbeat_timeout,
                broker.dead_message_ttl,
                broker._should_do_maintenance("enqueue"),
                unpack,
                message.options["redis_message_id"],
                message.encode(),
            )
        results: list[Any] = await pipe.execute(raise_on_error=False)
        return results

    async def aclose(self) -> None:
        """Close the client's connections."""
        await self.client.aclose()
