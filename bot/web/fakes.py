"""In-memory implementations of the web ports, for tests and for a quick local run."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from bot.web.ports import DeliveryStatus
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


class MemoryDeliveryStore:
    """Thread-safe dict keyed by delivery id; the lock plays the unique constraint."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: dict[str, DeliveryRecord] = {}
        self.down = False
        """Set to ``True`` to emulate an unreachable database."""

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("database unreachable")

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
        """Insert unless present and not ``failed``; ``False`` for a duplicate."""
        self._check()
        with self._lock:
            existing = self.records.get(delivery_id)
            if existing is not None and existing.status != "failed":
                return False
            self.records[delivery_id] = DeliveryRecord(
                delivery_id, event, action, installation_id, repo, payload_sha256, status, reason
            )
            return True

    def mark_delivery(self, delivery_id: str, status: DeliveryStatus, reason: str | None) -> None:
        """Update the status (and reason) of a recorded delivery."""
        self._check()
        with self._lock:
            record = self.records[delivery_id]
            record.status = status
            record.reason = reason

    def set_delivery_latency(self, delivery_id: str, latency_ms: float) -> None:
        """Store the answer time of a recorded delivery (unknown ids are ignored, as in SQL)."""
        self._check()
        with self._lock:
            record = self.records.get(delivery_id)
            if record is not None:
                record.latency_ms = latency_ms

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
