"""The dramatiq actors: thin shells around :mod:`jobs.pipeline`.

Nothing is declared at import time: :func:`declare_actors` binds the actors to a given broker
(the worker's, or a test's :class:`~dramatiq.brokers.stub.StubBroker`). Each body decodes the
:class:`~jobs.messages.JobRequest`, rebinds its log context, builds the dependencies and calls
the domain function with the message id (so the message that claimed an attempt can resume it).

Every actor states its retry, time and age limits explicitly (:data:`ACTOR_OPTIONS`): repairs
are long and expensive, so they are retried rarely and never after hitting their time limit;
GitHub writes are short and retried more (GitHub has bad minutes); a repair request older than
a day is stale (the branch has moved on) and is dropped with an event instead of run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs import logctx, pipeline
from jobs.broker import QUEUES
from jobs.messages import ActorName, JobRequest

if TYPE_CHECKING:
    import dramatiq

    from jobs.pipeline import Deps

DepsFactory = Callable[[], "Deps"]

_MINUTE_MS = 60_000
_HOUR_MS = 60 * _MINUTE_MS


@dataclass(frozen=True, slots=True)
class ActorOptions:
    """Retry, time and age limits of one actor (milliseconds, as dramatiq counts)."""

    max_retries: int
    time_limit: int
    max_age: int
    min_backoff: int = 15_000
    max_backoff: int = 15 * _MINUTE_MS
    retry_on_time_limit: bool = False
    """Whether hitting the time limit is worth another try (never for a repair)."""


ACTOR_OPTIONS: Mapping[ActorName, ActorOptions] = {
    "refresh_index": ActorOptions(max_retries=3, time_limit=30 * _MINUTE_MS, max_age=6 * _HOUR_MS),
    "repair_ci_failure": ActorOptions(max_retries=2, time_limit=60 * _MINUTE_MS, max_age=24 * _HOUR_MS),
    "repair_issue": ActorOptions(max_retries=2, time_limit=60 * _MINUTE_MS, max_age=24 * _HOUR_MS),
    "handle_command": ActorOptions(max_retries=2, time_limit=60 * _MINUTE_MS, max_age=24 * _HOUR_MS),
    "publish_result": ActorOptions(
        max_retries=6, time_limit=10 * _MINUTE_MS, max_age=72 * _HOUR_MS, retry_on_time_limit=True
    ),
    "record_pr_outcome": ActorOptions(
        max_retries=6, time_limit=2 * _MINUTE_MS, max_age=7 * 24 * _HOUR_MS, retry_on_time_limit=True
    ),
}


def _run(function: pipeline.DomainFunction, payload: Mapping[str, Any], deps_factory: DepsFactory) -> None:
    """The common body: decode, rebind the log context, build dependencies, call the domain."""
    job = JobRequest.from_dict(payload)
    logctx.bind_job(job)
    function(deps_factory(), job, message_id=logctx.current_message_id())


def declare_actors(broker: dramatiq.Broker, deps_factory: DepsFactory) -> dict[str, dramatiq.Actor[Any, Any]]:
    """Declare the six actors on ``broker``; ``deps_factory`` is called once per message."""
    import dramatiq
    from dramatiq.middleware import TimeLimitExceeded

    def refresh_index(payload: dict[str, Any]) -> None:
        _run(pipeline.refresh_index, payload, deps_factory)

    def repair_ci_failure(payload: dict[str, Any]) -> None:
        _run(pipeline.repair_ci_failure, payload, deps_factory)

    def repair_issue(payload: dict[str, Any]) -> None:
        _run(pipeline.repair_issue, payload, deps_factory)

    def handle_command(payload: dict[str, Any]) -> None:
        _run(pipeline.handle_command, payload, deps_factory)

    def publish_result(payload: dict[str, Any]) -> None:
        _run(pipeline.publish_result, payload, deps_factory)

    def record_pr_outcome(payload: dict[str, Any]) -> None:
        _run(pipeline.record_pr_outcome, payload, deps_factory)

    bodies: dict[ActorName, Callable[[dict[str, Any]], None]] = {
        "refresh_index": refresh_index,
        "repair_ci_failure": repair_ci_failure,
        "repair_issue": repair_issue,
        "handle_command": handle_command,
        "publish_result": publish_result,
        "record_pr_outcome": record_pr_outcome,
    }
    actors: dict[str, dramatiq.Actor[Any, Any]] = {}
    for name, body in bodies.items():
        options = ACTOR_OPTIONS[name]
        limits: dict[str, Any] = {
            "max_retries": options.max_retries,
            "time_limit": options.time_limit,
            "max_age": options.max_age,
            "min_backoff": options.min_backoff,
            "max_backoff": options.max_backoff,
        }
        if not options.retry_on_time_limit:
            limits["throws"] = (TimeLimitExceeded,)
        declare = dramatiq.actor(actor_name=name, queue_name=QUEUES[name], broker=broker, **limits)
        actors[name] = declare(body)
    return actors
