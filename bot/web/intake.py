"""The webhook intake's writer: group commit of deliveries, then their jobs to the broker.

Every delivery must be durably recorded (with its jobs: the outbox) before it is acknowledged,
and a commit waits for the database's log flush (milliseconds, on PostgreSQL and SQLite alike).
Requests hand their delivery to the intake, whose writer tasks (at most ``writers`` per process,
on the event loop) take every delivery waiting at that moment, record them all with one statement
(one flush serves the batch), enqueue the jobs of the fresh ones and tell the relay, then settle
the waiting requests. An idle process writes a lone delivery at once: nothing waits for a timer.

On PostgreSQL and Redis both steps are awaited on the event loop (:mod:`bot.web.pg_intake`,
:mod:`bot.web.redis_intake`: one round trip each per batch); with any other store or broker
(SQLite, RabbitMQ, the tests' fakes) the step runs the port's synchronous method in a thread, once
per batch. No thread hand-off per request: under load each one cost more (waiting for the
interpreter lock) than the database and broker calls themselves.

Failures: a failed statement fails its whole batch (each request answers 503, none of it is
recorded; values are validated before they are batched, so one delivery cannot poison the
others). Jobs the broker did not take are left to the relay (:mod:`bot.web.relay`); with a
synchronous broker the rest of the batch is left to it after the first failure, so a stalled
broker costs one socket timeout per batch, not one per job.

A stalled database: the writer enqueues only what it still holds a live claim on. A recorded
``received`` row belongs to its writer for the relay grace after the row's time; then the relay,
or a redelivery, may claim it and enqueue its jobs. So the writer enqueues a fresh delivery only
when its statement returned within ``claim_s`` (half the grace) of being sent, and never one whose
request already answered 503 (``abandoned``): such a late-recorded delivery is left to exactly one
later claim (the relay after the grace, or GitHub's redelivery), never enqueued twice. A
delivery abandoned before its batch was written is not written at all.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from bot.web.ports import DeliveryRow, DeliveryStore, Enqueuer
from bot.web.relay import Relay
from jobs.messages import Envelope

log = structlog.get_logger("arcs.intake")

MAX_BATCH = 200
"""Deliveries per statement at most (far more than arrive during one commit)."""
CLAIM_S = 15.0
"""Default of how long after its statement was sent a fresh delivery may still be enqueued by the
writer (half the default relay grace of 30 s; :func:`bot.web.app.create_app` passes half of
``ARCS_RELAY_GRACE_S``)."""
WRITERS = 2
"""Writer tasks per process: one batch can be recorded while another is enqueued, and a stalled
broker does not hold every batch; more writers only make the batches smaller (bench/intake: 1, 2
and 4 within the noise, 2 kept for the overlap)."""


class LateRecord(TimeoutError):
    """A delivery recorded after its writer's claim ran out: its jobs are left to the relay."""


class AsyncRecorder(Protocol):
    """Records a batch from the event loop (:class:`bot.web.pg_intake.AsyncPgRecorder`)."""

    async def record(self, rows: Sequence[DeliveryRow]) -> set[str]:
        """The ids that were fresh (:meth:`DeliveryStore.record_deliveries`)."""
        ...

    async def aclose(self) -> None:
        """Release the connections."""
        ...


class AsyncSender(Protocol):
    """Enqueues batches from the event loop (:class:`bot.web.redis_intake.AsyncRedisSender`)."""

    async def send(self, batches: Sequence[Sequence[Envelope]]) -> list[BaseException | None]:
        """Per batch ``None`` when the broker took all its jobs, else the error."""
        ...

    async def aclose(self) -> None:
        """Release the connections."""
        ...


@dataclass(eq=False)
class Submission:
    """One delivery on its way through the writer, and how far it got.

    ``recorded`` and ``broker_error`` are set as the writer goes, so a request whose deadline
    passed can still tell "never recorded" (503) from "recorded, the broker is slow" (202: the
    relay finishes it).
    """

    row: DeliveryRow
    jobs: Sequence[Envelope]
    started: float
    future: asyncio.Future[None]
    recorded: bool = False
    fresh: bool | None = None
    enqueued: bool = False
    broker_error: BaseException | None = field(default=None, repr=False)
    abandoned: bool = False
    """The request answered 503 ("not recorded") without waiting any longer: the writer must not
    record it any more, nor enqueue it if its statement was already on its way."""
    fresh_but_left: bool = False
    """Recorded fresh, but too late for the writer to enqueue: the relay's (or a redelivery's)."""


@dataclass(eq=False)
class _Lane:
    """The deliveries waiting on one event loop, and the writer tasks serving them."""

    waiting: deque[Submission] = field(default_factory=deque)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


class Intake:
    """Records deliveries and enqueues their jobs for the event loop, in batches."""

    def __init__(
        self,
        store: DeliveryStore,
        enqueuer: Enqueuer,
        relay: Relay,
        *,
        max_batch: int = MAX_BATCH,
        writers: int = WRITERS,
        recorder: AsyncRecorder | None = None,
        sender: AsyncSender | None = None,
        claim_s: float = CLAIM_S,
    ) -> None:
        self.store = store
        self.enqueuer = enqueuer
        self.relay = relay
        self.claim_s = claim_s
        self.max_batch = max_batch
        self.writers = writers
        self.recorder = recorder
        self.sender = sender
        self._lanes: dict[asyncio.AbstractEventLoop, _Lane] = {}

    async def submit(self, row: DeliveryRow, jobs: Sequence[Envelope], *, started: float) -> Submission:
        """Hand ``row`` (and its ``jobs``) to the writer; returns at once. Await
        ``submission.future`` for the outcome (it raises what the store raised)."""
        loop = asyncio.get_running_loop()
        lane = self._lanes.get(loop)
        if lane is None:
            # Lanes of closed loops (a test client's) hold nothing any more.
            self._lanes = {lp: ln for lp, ln in self._lanes.items() if not lp.is_closed()}
            lane = self._lanes[loop] = _Lane()
        submission = Submission(row, jobs, started, loop.create_future())
        lane.waiting.append(submission)
        if len(lane.tasks) < self.writers:
            task = loop.create_task(self._drain(lane))
            lane.tasks.add(task)
        return submission

    async def _drain(self, lane: _Lane) -> None:
        """A writer task: batches until nothing waits (no await between the check and the exit,
        so a submission never waits without a writer)."""
        try:
            while lane.waiting:
                size = min(len(lane.waiting), self.max_batch)
                await self._process([lane.waiting.popleft() for _ in range(size)])
        finally:
            task = asyncio.current_task()
            if task is not None:
                lane.tasks.discard(task)

    async def aclose(self, timeout_s: float = 5.0) -> None:
        """Let the writers finish what is queued (bounded by ``timeout_s``), then close the async
        connections."""
        lane = self._lanes.get(asyncio.get_running_loop())
        if lane is not None and lane.tasks:
            await asyncio.wait(set(lane.tasks), timeout=timeout_s)
        for closeable in (self.recorder, self.sender):
            if closeable is not None:
                try:
                    await closeable.aclose()
                except Exception as exc:  # shutting down anyway; say what failed
                    log.warning("intake_close_failed", error=repr(exc))

    # --- one batch --------------------------------------------------------------------------

    async def _process(self, batch: list[Submission]) -> None:
        # Requests that already answered 503 while waiting for a writer: never recorded now.
        batch = [s for s in batch if not s.abandoned]
        if not batch:
            return
        error: BaseException | None = None
        try:
            sent = time.perf_counter()
            await self._record(batch)
            self._keep_live_claims(batch, sent)
            await self._enqueue(batch)
        except Exception as exc:  # the store failed: every request of the batch answers 503
            error = exc
        except BaseException as exc:  # cancelled (shutdown): answer, then stop
            _settle(batch, exc if isinstance(exc, Exception) else ConnectionError("shutting down"))
            raise
        _settle(batch, error)

    async def _record(self, batch: list[Submission]) -> None:
        rows = [s.row for s in batch]
        if self.recorder is not None:
            fresh = await self.recorder.record(rows)
        else:
            fresh = await asyncio.to_thread(self.store.record_deliveries, rows)
        claimed: set[str] = set()
        for submission in batch:
            delivery_id = submission.row.delivery_id
            # An id twice in one batch (concurrent redeliveries): the first one is the fresh one.
            submission.fresh = delivery_id in fresh and delivery_id not in claimed
            if submission.fresh:
                claimed.add(delivery_id)
            submission.recorded = True

    def _keep_live_claims(self, batch: list[Submission], sent: float) -> None:
        """Give up the writer's claim on fresh deliveries recorded too late to be the writer's
        (see the module docstring): the relay or a redelivery enqueues them, once."""
        late = time.perf_counter() - sent >= self.claim_s
        for submission in batch:
            if submission.fresh and submission.jobs and (late or submission.abandoned):
                submission.fresh_but_left = True
                submission.broker_error = LateRecord(
                    "recorded after the request gave up" if submission.abandoned else "recorded late"
                )
                log.warning(
                    "intake_recorded_late",
                    delivery_id=submission.row.delivery_id,
                    abandoned=submission.abandoned,
                    record_ms=round((time.perf_counter() - sent) * 1000),
                )

    async def _enqueue(self, batch: list[Submission]) -> None:
        todo = [s for s in batch if s.fresh and s.jobs and not s.fresh_but_left]
        if not todo:
            return
        if self.sender is not None:
            outcome = await self.sender.send([s.jobs for s in todo])
            for submission, error in zip(todo, outcome, strict=True):
                submission.broker_error = error
                submission.enqueued = error is None
        else:
            await asyncio.to_thread(self._enqueue_sync, todo)
        confirmed: list[tuple[str, float | None]] = [
            (s.row.delivery_id, (time.perf_counter() - s.started) * 1000) for s in todo if s.enqueued
        ]
        if confirmed:
            self.relay.confirmed_many(confirmed)

    def _enqueue_sync(self, todo: list[Submission]) -> None:
        """A synchronous broker, in a thread: after the first failure the rest is the relay's."""
        broker_error: BaseException | None = None
        for submission in todo:
            if broker_error is None:
                try:
                    for job in submission.jobs:
                        self.enqueuer.enqueue(job)
                except Exception as exc:
                    broker_error = exc
                else:
                    submission.enqueued = True
                    continue
            submission.broker_error = broker_error


def _settle(batch: list[Submission], error: BaseException | None) -> None:
    """Wake the batch's requests (those still waiting: a request may have given up)."""
    for submission in batch:
        if submission.future.done():
            continue
        if error is not None:
            submission.future.set_exception(error)
        else:
            submission.future.set_result(None)
