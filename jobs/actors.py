"""The dramatiq actors: thin shells around the application functions (:mod:`jobs.pipeline`).

Nothing is declared at import time: :func:`declare_actors` binds the actors to a given broker
(the worker's, or a test's :class:`~dramatiq.brokers.stub.StubBroker`). Each body decodes and
validates the :class:`~jobs.messages.Envelope` (a message that does not decode is failed at
once, never retried: a ``job_failed`` event says why), rebinds its log context, builds the
dependencies and calls the application function with the message id (so the message that
claimed an attempt can resume it).

An actor is declared once: its message class (:mod:`jobs.messages`, with its queue and limits) and
its row in :data:`jobs.pipeline.FUNCTIONS`; this module declares every row the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jobs import logctx, pipeline
from jobs.messages import ACTOR_OPTIONS, Envelope, MessageInvalid

if TYPE_CHECKING:
    import dramatiq

    from jobs.pipeline import Deps

DepsFactory = Callable[[], "Deps"]


def _run(function: pipeline.DomainFunction, payload: Mapping[str, Any], deps_factory: DepsFactory) -> None:
    """The common body: decode, rebind the log context, build dependencies, call the domain."""
    job = Envelope.from_json(payload)
    logctx.bind_job(job)
    function(deps_factory(), job, message_id=logctx.current_message_id())


def _body(function: pipeline.DomainFunction, deps_factory: DepsFactory) -> Callable[[dict[str, Any]], None]:
    def body(payload: dict[str, Any]) -> None:
        _run(function, payload, deps_factory)

    return body


def declare_actors(broker: dramatiq.Broker, deps_factory: DepsFactory) -> dict[str, dramatiq.Actor[Any, Any]]:
    """Declare the actors on ``broker``; ``deps_factory`` is called once per message."""
    import dramatiq
    from dramatiq.middleware import TimeLimitExceeded

    actors: dict[str, dramatiq.Actor[Any, Any]] = {}
    for name, function in pipeline.FUNCTIONS.items():
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
        declare = dramatiq.actor(actor_name=name, queue_name=options.queue, broker=broker, **limits)
        actors[name] = declare(_body(function, deps_factory))
    return actors
