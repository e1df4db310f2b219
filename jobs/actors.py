"""The dramatiq actors: thin shells around the application functions (:mod:`jobs.pipeline`).

Nothing is declared at import time: :func:`declare_actors` binds the actors to a given broker
(the worker's, or a test's :class:`~dramatiq.brokers.stub.StubBroker`). Each body decodes and
validates the :class:`~jobs.messages.Envelope` (a message that does not decode is failed at
once, never retried: a ``job_failed`` event says why), rebinds its log context, builds the
dependencies and calls the application function with the message id (so the message that
claimed an attempt can resume it).

Every actor states its retry, time and age limits explicitly
(:data:`jobs.messages.ACTOR_OPTIONS`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jobs import logctx, pipeline
from jobs.broker import QUEUES
from jobs.messages import ACTOR_OPTIONS, ActorName, Envelope, MessageInvalid

if TYPE_CHECKING:
    import dramatiq

    from jobs.pipeline import Deps

DepsFactory = Callable[[], "Deps"]


def _run(function: pipeline.DomainFunction, payload: Mapping[str, Any], deps_factory: DepsFactory) -> None:
    """The common body: decode, rebind the log context, build dependencies, call the domain."""
    job = Envelope.from_json(payload)
    logctx.bind_job(job)
    function(deps_factory(), job, message_id=logctx.current_message_id())


def declare_actors(broker: dramatiq.Broker, deps_factory: DepsFactory) -> dict[str, dramatiq.Actor[Any, Any]]:
    """Declare the actors on ``broker``; ``deps_factory`` is called once per message."""
    import dramatiq
    from dramatiq.middleware import TimeLimitExceeded

    def refresh_index(payload: dict[str, Any]) -> None:
        _run(pipeline.refresh_index, payload, deps_factory)

    def drop_index(payload: dict[str, Any]) -> None:
        _run(pipeline.drop_index_job, payload, deps_factory)

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

    def watch_checks(payload: dict[str, Any]) -> None:
        _run(pipeline.watch_checks, payload, deps_factory)

    def refresh_dashboard(payload: dict[str, Any]) -> None:
        _run(pipeline.refresh_dashboard, payload, deps_factory)

    bodies: dict[ActorName, Callable[[dict[str, Any]], None]] = {
        "refresh_index": refresh_index,
        "drop_index": drop_index,
        "repair_ci_failure": repair_ci_failure,
        "repair_issue": repair_issue,
        "handle_command": handle_command,
        "publish_result": publish_result,
        "record_pr_outcome": record_pr_outcome,
        "watch_checks": watch_checks,
        "refresh_dashboard": refresh_dashboard,
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
        # A message that does not decode never will: fail it at once (reported, not retried).
        throws: tuple[type[BaseException], ...] = (MessageInvalid,)
        if not options.retry_on_time_limit:
            throws = (TimeLimitExceeded, *throws)
        limits["throws"] = throws
        declare = dramatiq.actor(actor_name=name, queue_name=QUEUES[name], broker=broker, **limits)
        actors[name] = declare(body)
    return actors
