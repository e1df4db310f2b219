"""What the web side needs from the outside world: a delivery record and a job queue.

The webhook handler depends only on these two protocols. The real implementations live in
``bot.store`` (``open_store(settings)``, a SQLAlchemy store whose ``deliveries`` table has a unique
constraint on ``delivery_id``) and ``jobs.broker`` (``make_enqueuer(settings)``); the in-memory
fakes in :mod:`bot.web.fakes` satisfy them for tests.

Contract for ``DeliveryStore.record_delivery``: it is the *only* arbiter of duplicates. It must
insert atomically (a unique constraint, not read-then-write) and return ``False`` when a
delivery with that id already exists in a non-``failed`` status. A delivery previously marked
``failed`` (enqueue failed after recording, and the web side answered 503 so GitHub shows the
failure) must be *re-claimable*: recording it again returns ``True`` and overwrites the row, so a
redelivery from GitHub's UI is processed instead of being ignored forever.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from jobs.messages import JobRequest

DeliveryStatus = Literal["queued", "ignored", "failed"]
"""``queued``: jobs were enqueued; ``ignored``: acknowledged, nothing to do (the reason says why);
``failed``: recording succeeded but enqueueing did not (a redelivery is accepted again)."""


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
    ) -> bool:
        """Insert the delivery; ``False`` means a duplicate (already recorded and not ``failed``).

        Must be atomic under concurrency (two requests with the same id: exactly one ``True``).
        Raises on a database failure (the web side answers 503).
        """
        ...

    def mark_delivery(self, delivery_id: str, status: DeliveryStatus, reason: str | None) -> None:
        """Update the status of a recorded delivery (``failed`` when enqueueing failed)."""
        ...

    def set_delivery_latency(self, delivery_id: str, latency_ms: float) -> None:
        """Store how long answering the delivery took (``/metrics``); unknown ids are ignored.

        Called after the answer was sent; a failure is logged by the caller, never retried.
        """
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
