"""The outbox relay: deliveries recorded with their jobs reach the broker exactly once in effect.

The webhook handler writes each delivery *with its jobs* in one statement (status ``received``),
enqueues the jobs itself and tells the relay (:meth:`Relay.confirmed`); the relay's thread then
marks the confirmed deliveries ``enqueued``, many per statement, off the request path. So the hot
path costs one database write, and nothing is lost when a step fails:

* the web process dies (SIGKILL) after the write and before the broker took the jobs, or the
  broker is down or stalls: the row stays ``received``; ``relay_grace`` later any web process's
  relay (:meth:`Relay.sweep`, every ``interval_s``) or GitHub's redelivery claims it and enqueues
  its jobs again;
* the process dies after the broker took the jobs and before the row was marked: the jobs are
  enqueued a second time. Every job carries its idempotency key, and the worker claims one attempt
  per key (:func:`jobs.run.claim`: a second message for a claimed attempt is a no-op), so
  the repair still runs once.

A claim renews the grace (one statement, ``SKIP LOCKED`` on PostgreSQL), so relays of several web
processes, and a redelivery, never enqueue the same row twice within it.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque

import structlog

from bot.web.ports import DeliveryStore, Enqueuer
from jobs.messages import Envelope, MessageInvalid

log = structlog.get_logger("arcs.relay")

MAX_PENDING = 10_000
"""Confirmations kept while the database is down; older ones are dropped (those deliveries are
then enqueued once more by a relay after the grace, which the idempotency keys absorb)."""
RETRY_S = 1.0
"""Pause after a failed database write before the next try."""
COALESCE_S = 0.05
"""After the first confirmation, wait this long for more before writing: under load one statement
(and one wake-up of the thread, which competes with the event loop for the interpreter lock)
serves many batches of the intake."""


class Relay:
    """Marks confirmed deliveries ``enqueued`` in batches and re-enqueues the stuck ones.

    Thread-safe. :meth:`start` runs both in one daemon thread; :meth:`flush` and :meth:`sweep`
    can also be called directly (tests, shutdown).
    """

    def __init__(
        self,
        store: DeliveryStore,
        enqueuer: Enqueuer,
        *,
        interval_s: float = 5.0,
        batch: int = 100,
        coalesce_s: float = COALESCE_S,
    ) -> None:
        self.store = store
        self.coalesce_s = coalesce_s
        self.enqueuer = enqueuer
        self.interval_s = interval_s
        self.batch = batch
        self._pending: deque[tuple[str, float | None]] = deque(maxlen=MAX_PENDING)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def confirmed(self, delivery_id: str, latency_ms: float | None) -> None:
        """The broker took every job of ``delivery_id`` (never blocks; written by the thread)."""
        self.confirmed_many([(delivery_id, latency_ms)])

    def confirmed_many(self, confirmed: list[tuple[str, float | None]]) -> None:
        """:meth:`confirmed` for several deliveries at once."""
        with self._lock:
            self._pending.extend(confirmed)
        self._wake.set()

    @property
    def pending(self) -> int:
        """Confirmations not written yet."""
        with self._lock:
            return len(self._pending)

    def flush(self) -> int:
        """Write the pending confirmations (one statement); raises when the database fails (the
        confirmations are kept for the next try). Returns how many were written."""
        with self._lock:
            batch = list(self._pending)
            self._pending.clear()
        if not batch:
            return 0
        try:
            self.store.mark_enqueued(batch)
        except Exception:
            with self._lock:
                # Put them back in front, in order; the deque's maxlen drops the oldest.
                self._pending.extendleft(reversed(batch))
            raise
        return len(batch)

    def sweep(self) -> int:
        """Claim deliveries left ``received`` past the grace and enqueue their jobs again.

        Stops at the first broker failure (the rest is retried after another grace). Returns the
        number of deliveries enqueued.
        """
        relayed: list[tuple[str, float | None]] = []
        try:
            for delivery_id, jobs in self.store.claim_stuck_deliveries(self.batch):
                try:
                    for job in jobs:
                        try:
                            envelope = Envelope.from_json(job)
                        except MessageInvalid as exc:
                            # It will never decode: skipping it beats holding up the outbox.
                            log.error("relay_job_invalid", delivery_id=delivery_id, error=str(exc)[:300])
                            continue
                        self.enqueuer.enqueue(envelope)
                except Exception as exc:
                    log.warning("relay_broker_unavailable", delivery_id=delivery_id, error=repr(exc))
                    break
                log.info("relay_enqueued", delivery_id=delivery_id, jobs=[j.get("actor") for j in jobs])
                relayed.append((delivery_id, None))
        finally:
            if relayed:
                self.store.mark_enqueued(relayed)
        return len(relayed)

    # --- the thread -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the relay thread (once)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="arcs-relay", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread and write what is pending (best effort, bounded by ``timeout_s``)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        self._wake.set()
        thread.join(timeout_s)
        try:
            self.flush()
        except Exception as exc:  # the relay of a later process re-enqueues them; said in the log
            log.warning("relay_final_flush_failed", pending=self.pending, error=repr(exc))

    def _next_sweep(self) -> float:
        # Jittered, so the relays of several processes do not all scan at the same moment.
        return time.monotonic() + self.interval_s * random.uniform(0.8, 1.2)

    def _run(self) -> None:
        next_sweep = self._next_sweep()
        while not self._stop.is_set():
            if self._wake.wait(max(0.0, next_sweep - time.monotonic())):
                self._stop.wait(self.coalesce_s)  # let more confirmations gather
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.flush()
            except Exception as exc:
                log.warning("relay_flush_failed", pending=self.pending, error=repr(exc))
                self._stop.wait(RETRY_S)
            if time.monotonic() >= next_sweep:
                try:
                    self.sweep()
                except Exception as exc:
                    log.warning("relay_sweep_failed", error=repr(exc))
                next_sweep = self._next_sweep()
