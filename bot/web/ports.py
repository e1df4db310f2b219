"""What the web side needs from the outside world: a delivery record and a job queue.

The webhook handler depends only on these two protocols. The real implementations live in
``bot.store`` (``open_store(settings)``, a SQLAlchemy store whose ``deliveries`` table has a unique
constraint on ``delivery_id``) and ``jobs.broker`` (``make_enqueuer(settings)``); the in-memory
fakes in :mod:`bot.web.fakes` satisfy them for tests.

Contract for ``DeliveryStore.record_delivery``: it is the *only* arbiter of duplicates. It must
insert atomically (a unique constraint, not read-then-write), in one write that holds the
delivery's jobs too (the outbox: a recorded delivery can always be enqueued again), and return
``False`` when a delivery with that id already exists. Two kinds of rows are *re-claimable*
(recording again returns ``True`` and overwrites the row, one winner under concurrency): a
``received`` row whose jobs the broker has not confirmed for longer than the store's relay grace
(the process that recorded it died, or the broker failed), and a ``failed`` row (written by older
versions). ``mark_enqueued`` and ``claim_stuck_deliveries`` serve the relay
(:mod:`bot.web.relay`), which enqueues such rows again without waiting for a redelivery.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from jobs.messages import JobRequest

DeliveryStatus = Literal["received", "enqueued", "ignored", "queued", "failed"]
"""``received``: recorded with its jobs, not yet confirmed by the broker; ``enqueued``: the broker
took them; ``ignored``: acknowledged, nothing to do (the reason says why). ``queued`` (enqueued)
and ``failed`` (re-claimable) are written by older versions only."""


@dataclass(frozen=True, slots=True)
class DeliveryRow:
    """One delivery to record (the arguments of :meth:`DeliveryStore.record_delivery`)."""

    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repo: str | None
    payload_sha256: str
    status: DeliveryStatus
    reason: str | None
    jobs: Sequence[Mapping[str, Any]] | None = None
    latency_ms: float | None = None


@runtime_checkable
class DeliveryStore(Protocol):
    """Remembers every webhook delivery once (idempotency for GitHub's at-least-once delivery)."""

    def record_delivery(
        self,
        delivery_id: str,
        event: str,
        action: str | None,
        installation_id: int | None,
        repo: str | None,
        payload_sha256: str,
        status: DeliveryStatus,
        reason: str | None,
        *,
        jobs: Sequence[Mapping[str, Any]] | None = None,
        latency_ms: float | None = None,
    ) -> bool:
        """Insert the delivery with its ``jobs`` (``JobRequest.as_dict()``) in one write;
        ``False`` means a duplicate (see the module docstring for re-claimable rows).

        Must be atomic under concurrency (two requests with the same id: exactly one ``True``).
        Raises on a database failure (the web side answers 503).
        """
        ...

    def record_deliveries(self, rows: Sequence[DeliveryRow]) -> set[str]:
        """Record several deliveries in one statement (group commit); the ids that were fresh.

        Same rules as :meth:`record_delivery` per row; an id given twice counts once. Raises on a
        database failure (then none of them is recorded).
        """
        ...

    def mark_enqueued(self, confirmed: Sequence[tuple[str, float | None]]) -> int:
        """``received`` -> ``enqueued`` for ``(delivery_id, latency_ms)`` pairs (one batch)."""
        ...

    def claim_stuck_deliveries(self, limit: int = 100) -> list[tuple[str, list[dict[str, Any]]]]:
        """Claim ``received`` rows older than the relay grace: ``[(delivery_id, jobs)]``."""
        ...

    def ping(self) -> None:
        """Return when the database is reachable; raise otherwise (``/readyz``)."""
        ...


@runtime_checkable
class Enqueuer(Protocol):
    """Puts job requests on the broker (the only thing the web side knows about the queue)."""

    def enqueue(self, job: JobRequest) -> None:
        """Send one job; raise when the broker does not accept it (the web side answers 503)."""
        ...

    def ping(self) -> None:
        """Return when the broker is reachable; raise otherwise (``/readyz``)."""
        ...


@runtime_checkable
class QueueDepth(Protocol):
    """Optional for an :class:`Enqueuer`: how many jobs wait in the broker (``/metrics``)."""

    def queue_depth(self) -> int | None:
        """Messages waiting to be taken by a worker, summed over the queues; ``None`` when the
        broker cannot tell. May raise when the broker is unreachable."""
        ...
