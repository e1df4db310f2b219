"""In-memory implementations of the web ports, for tests and for a quick local run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.web.ports import DeliveryRow, DeliveryStatus
from jobs.messages import JobRequest


@dataclass
class DeliveryRecord:
    """One recorded delivery (what the real store keeps in its ``deliveries`` table)."""

    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repo: str | None
    payload_sha256: str
    status: DeliveryStatus
    reason: str | None
    latency_ms: float | None = None
    jobs: list[dict[str, Any]] | None = None
    updated_at: float = 0.0
    """When the row was written or last claimed (the fake's clock, seconds)."""


class MemoryDeliveryStore:
    """Thread-safe dict keyed by delivery id; the lock plays the unique constraint.

    ``grace_s`` and ``clock`` play the SQL store's relay grace (rows still ``received`` that long
    after their last claim are re-claimable) and its clock.
    """

    def __init__(self, *, grace_s: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self.records: dict[str, DeliveryRecord] = {}
        self.down = False
        """Set to ``True`` to emulate an unreachable database."""
        self.grace_s = grace_s
        self.clock = clock

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("database unreachable")

    def _reclaimable(self, record: DeliveryRecord) -> bool:
        if record.status == "failed":
            return True
        return record.status == "received" and record.updated_at < self.clock() - self.grace_s

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
        """Insert unless present and not re-claimable; ``False`` for a duplicate."""
        self._check()
        with self._lock:
            existing = self.records.get(delivery_id)
            if existing is not None and not self._reclaimable(existing):
                return False
            self.records[delivery_id] = DeliveryRecord(
                delivery_id,
                event,
                action,
                installation_id,
                repo,
                payload_sha256,
                status,
                reason,
                latency_ms,
                [dict(job) for job in jobs] if jobs is not None else None,
                self.clock(),
            )
            return True

    def record_deliveries(self, rows: Sequence[DeliveryRow]) -> set[str]:
        """:meth:`record_delivery` for each row (all or nothing when down); the fresh ids."""
        self._check()
        fresh: set[str] = set()
        for row in rows:
            if self.record_delivery(
                row.delivery_id,
                row.event,
                row.action,
                row.installation_id,
                row.repo,
                row.payload_sha256,
                row.status,
                row.reason,
                jobs=row.jobs,
                latency_ms=row.latency_ms,
            ):
                fresh.add(row.delivery_id)
        return fresh

    def mark_enqueued(self, confirmed: Sequence[tuple[str, float | None]]) -> int:
        """``received`` -> ``enqueued`` (with the latency when given)."""
        self._check()
        changed = 0
        with self._lock:
            for delivery_id, latency_ms in confirmed:
                record = self.records.get(delivery_id)
                if record is None or record.status != "received":
                    continue
                record.status = "enqueued"
                record.updated_at = self.clock()
                if latency_ms is not None:
                    record.latency_ms = latency_ms
                changed += 1
        return changed

    def claim_stuck_deliveries(self, limit: int = 100) -> list[tuple[str, list[dict[str, Any]]]]:
        """Claim ``received`` rows older than the grace (renewing it), oldest first."""
        self._check()
        with self._lock:
            stuck = sorted(
                (r for r in self.records.values() if r.status == "received" and self._reclaimable(r)),
                key=lambda r: r.updated_at,
            )[:limit]
            for record in stuck:
                record.updated_at = self.clock()
            return [(r.delivery_id, [dict(j) for j in r.jobs or []]) for r in stuck]

    def mark_delivery(self, delivery_id: str, status: DeliveryStatus, reason: str | None) -> None:
        """Update the status (and reason) of a recorded delivery."""
        self._check()
        with self._lock:
            record = self.records[delivery_id]
            record.status = status
            record.reason = reason

    def ping(self) -> None:
        """Raise when emulating an outage."""
        self._check()


@dataclass
class ListEnqueuer:
    """Collects jobs in a list (thread-safe); ``down`` emulates a broker outage."""

    jobs: list[JobRequest] = field(default_factory=list)
    down: bool = False
    depth: int | None = None
    """What :meth:`queue_depth` answers (``None``: "cannot tell", as a broker without a count)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def enqueue(self, job: JobRequest) -> None:
        """Append the job, or raise when down."""
        if self.down:
            raise ConnectionError("broker unreachable")
        with self._lock:
            self.jobs.append(job)

    def ping(self) -> None:
        """Raise when emulating an outage."""
        if self.down:
            raise ConnectionError("broker unreachable")

    def queue_depth(self) -> int | None:
        """The scripted :attr:`depth` (raises when down)."""
        if self.down:
            raise ConnectionError("broker unreachable")
        return self.depth
