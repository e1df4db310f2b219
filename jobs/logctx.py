"""Log context across the queue: the web side's structlog context travels in each message and is
rebound in the worker, and every job ends with one canonical log line.

The enqueuer (:mod:`jobs.broker`) copies :data:`jobs.messages.CONTEXT_KEYS` of a job's context
into the message option ``arcs_context``. :class:`JobContextMiddleware`, first in the broker's
middleware chain, clears the worker thread's context, rebinds those keys (plus ``job`` and
``message_id``) before the actor runs, and after it logs ``job.done`` with the ``outcome`` the
domain code reported (:func:`set_outcome`; ``error``/``retrying`` when it raised) and the
duration. A message that is dropped (retries exhausted, too old) is also handed to ``on_failure``
so the worker can record it: nothing fails silently.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import dramatiq
import structlog
from structlog.contextvars import bind_contextvars, clear_contextvars, get_contextvars

from jobs.messages import CONTEXT_KEYS, JobRequest

CONTEXT_OPTION = "arcs_context"
"""The message option that carries the log context."""

log = structlog.get_logger("arcs.jobs")

_message_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("arcs_message_id", default=None)
_started: contextvars.ContextVar[float | None] = contextvars.ContextVar("arcs_job_started", default=None)


def context_of(job: JobRequest) -> dict[str, str]:
    """The log context a job carries (only :data:`CONTEXT_KEYS`, as strings)."""
    return {k: str(v) for k, v in job.context.items() if k in CONTEXT_KEYS and v is not None}


def bind_job(job: JobRequest) -> None:
    """Bind a job's context to the current thread's structlog context."""
    bind_contextvars(job=job.actor, **context_of(job))


def set_outcome(outcome: str, **fields: Any) -> None:
    """Report how the job ended (``fixed``, ``duplicate``, ``refused``…) for the canonical line."""
    bind_contextvars(outcome=outcome, **fields)


def current_message_id() -> str | None:
    """The id of the queue message being processed in this thread (``None`` outside a worker)."""
    return _message_id.get()


@dataclass(frozen=True, slots=True)
class DroppedJob:
    """A message that will not run (again): retries exhausted, or too old to start."""

    actor: str
    message_id: str
    reason: str
    job: JobRequest | None


def _context_from(message: Any) -> Mapping[str, Any]:
    carried = message.options.get(CONTEXT_OPTION)
    if isinstance(carried, Mapping):
        return carried
    # A message sent by someone else than our enqueuer: the JobRequest body still has it.
    body = message.args[0] if message.args else None
    if isinstance(body, Mapping):
        context = body.get("context")
        if isinstance(context, Mapping):
            return context
    return {}


def _job_of(message: Any) -> JobRequest | None:
    body = message.args[0] if message.args else None
    if not isinstance(body, Mapping):
        return None
    try:
        return JobRequest.from_dict(body)
    except (KeyError, TypeError, ValueError):
        return None


class JobContextMiddleware(dramatiq.Middleware):
    """Rebinds the carried log context around each message and logs one line per job."""

    def __init__(self, on_failure: Callable[[DroppedJob], None] | None = None) -> None:
        self.on_failure = on_failure

    def before_process_message(self, broker: dramatiq.Broker, message: Any) -> None:
        """Bind the message's context in the worker thread."""
        clear_contextvars()
        context = {k: str(v) for k, v in _context_from(message).items() if k in CONTEXT_KEYS}
        bind_contextvars(
            **context,
            job=message.actor_name,
            message_id=message.message_id,
            retries=int(message.options.get("retries", 0)),
        )
        _message_id.set(message.message_id)
        _started.set(time.monotonic())

    def after_process_message(
        self,
        broker: dramatiq.Broker,
        message: Any,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        """Log the canonical ``job.done`` line, report a dropped message, clear the context."""
        started = _started.get()
        duration_ms = round((time.monotonic() - started) * 1000, 1) if started is not None else None
        try:
            if exception is None:
                outcome = str(get_contextvars().get("outcome", "ok"))
                log.info("job.done", outcome=outcome, duration_ms=duration_ms)
                return
            dropped = bool(message.failed)
            outcome = "failed" if dropped else "retrying"
            log.error(
                "job.done",
                outcome=outcome,
                duration_ms=duration_ms,
                error=f"{type(exception).__name__}: {exception}"[:500],
            )
            if dropped:
                self._report(message, f"{type(exception).__name__}: {exception}"[:500])
        finally:
            self._reset()

    def after_skip_message(self, broker: dramatiq.Broker, message: Any) -> None:
        """A message skipped before running (``max_age``): say so, and report it."""
        try:
            log.warning("job.done", outcome="skipped", reason="message too old (max_age) or skipped")
            self._report(message, "skipped before running: the message was older than the actor's max_age")
        finally:
            self._reset()

    def _report(self, message: Any, reason: str) -> None:
        if self.on_failure is None:
            return
        try:
            self.on_failure(DroppedJob(message.actor_name, message.message_id, reason, _job_of(message)))
        except Exception as exc:  # reporting must not break the worker; the log line stays
            log.error("job.report_failed", error=f"{type(exc).__name__}: {exc}"[:300])

    @staticmethod
    def _reset() -> None:
        clear_contextvars()
        _message_id.set(None)
        _started.set(None)
