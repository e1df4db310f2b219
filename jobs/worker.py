"""``arcs worker``: consume the queues and run the actors, in N processes of M threads.

One process (:func:`serve`) builds the broker (:func:`jobs.broker.make_broker`), makes it
dramatiq's global broker, declares the actors with the dependency factory the edge's wiring builds
(:class:`WorkerSpec`: this module takes built values and never reads settings) and runs a
:class:`dramatiq.Worker` until SIGTERM/SIGINT. Shutdown is graceful: no new message is taken,
running jobs get ``grace_s`` to finish, prefetched messages go back to the broker. A job cut
short is redelivered later and resumes its attempt (the attempt remembers the message id).

With ``processes > 1`` a small supervisor (:func:`run_worker`) starts that many ``spawn``-ed
children, restarts one that dies unexpectedly, and forwards SIGTERM to all of them.

Messages that are dropped (retries exhausted, older than the actor's ``max_age``) are recorded
as ``job_failed`` events in the store, so nothing fails silently.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from jobs.broker import (
    BrokerConfig,
    BrokerConfigLike,
    broker_kind,
    close_broker,
    install_global,
    make_broker,
    ping_broker,
)
from jobs.logctx import DroppedJob, JobContextMiddleware
from runners.errors import ArcsError, ConfigError

if TYPE_CHECKING:
    import dramatiq

    from jobs.pipeline import Deps
    from jobs.ports import AttemptStore

log = structlog.get_logger("arcs.worker")

DepsFactory = Callable[[], "Deps"]
Wiring = Callable[["dramatiq.Broker"], DepsFactory]
"""Builds, once per process, the factory the actors call for their dependencies (follow-up jobs
go to the given broker). The edge supplies it (:func:`bot.worker_wiring.default_wiring` bound to
the settings); with ``processes > 1`` it is pickled into each child, so it is a module-level
function or a :func:`functools.partial` of one."""

DEFAULT_GRACE_S = 30.0
MAX_RESTARTS_PER_MINUTE = 5


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker process runs on, built by the edge (:func:`bot.worker_wiring.worker_spec`)."""

    broker: BrokerConfig
    wiring: Wiring
    on_start: Callable[[], None] | None = None
    """Called first in each child process of a multi-process worker (the edge configures
    logging there: a ``spawn``-ed child starts with none)."""


def _record_dropped(store: AttemptStore, dropped: DroppedJob) -> None:
    job = dropped.job
    args = job.args if job is not None else {}
    context = job.context if job is not None else {}
    attempt_id = args.get("attempt_id") or context.get("attempt_id")
    installation = args.get("installation_id")
    store.record_event(
        "job_failed",
        f"{dropped.actor} will not run again: {dropped.reason}",
        attempt_id=int(attempt_id) if attempt_id not in (None, "") else None,
        delivery_id=args.get("delivery_id") or context.get("delivery_id"),
        installation_id=int(installation) if installation not in (None, "") else None,
        repo=args.get("repo"),
        data={"message_id": dropped.message_id, "actor": dropped.actor},
    )


def setup(broker: dramatiq.Broker, wiring: Wiring) -> DepsFactory:
    """Make ``broker`` global, build the dependencies, declare the actors; return the factory."""
    from jobs.actors import declare_actors

    install_global(broker)
    factory = wiring(broker)

    def on_failure(dropped: DroppedJob) -> None:
        _record_dropped(factory().store, dropped)

    for middleware in broker.middleware:
        if isinstance(middleware, JobContextMiddleware) and middleware.on_failure is None:
            middleware.on_failure = on_failure
    declare_actors(broker, factory)
    return factory


def serve(
    spec: WorkerSpec,
    *,
    threads: int = 4,
    queues: Iterable[str] | None = None,
    stop: threading.Event | None = None,
    grace_s: float = DEFAULT_GRACE_S,
) -> int:
    """Run one worker process until ``stop`` is set (by SIGTERM/SIGINT in the main thread)."""
    import dramatiq

    stop = stop or threading.Event()
    broker = make_broker(spec.broker)
    try:
        factory = setup(broker, spec.wiring)
        ping_broker(broker)
    except ConnectionError as exc:
        # An unreachable store (the edge's StoreUnavailable) or broker (BrokerUnavailable): both
        # are ConnectionErrors, reported as one line instead of a traceback.
        raise ArcsError(f"worker: {exc}", exit_code=1) from exc
    previous = _handle_stop_signals(stop)
    wanted = set(queues) if queues else None
    worker = dramatiq.Worker(broker, queues=wanted, worker_threads=threads)
    worker.start()
    log.info("worker.started", broker=broker_kind(spec.broker), threads=threads, queues=sorted(wanted or []))
    try:
        while not stop.wait(1.0):
            pass
    finally:
        log.info("worker.stopping", grace_s=grace_s)
        worker.stop(timeout=int(grace_s * 1000))
        close_broker(broker)
        deps = factory()
        close_github = getattr(deps.github, "close", None)
        if callable(close_github):  # the shared GitHub connection pool
            with contextlib.suppress(Exception):
                close_github()
        deps.store.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        log.info("worker.stopped")
    return 0


def _handle_stop_signals(stop: threading.Event) -> dict[int, Any]:
    """SIGTERM/SIGINT set ``stop`` (main thread only); returns the handlers to restore."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, lambda _signum, _frame: stop.set())
    return previous


def _child(spec: WorkerSpec, threads: int, queues: list[str] | None, grace_s: float) -> None:
    if spec.on_start is not None:
        spec.on_start()
    raise SystemExit(serve(spec, threads=threads, queues=queues, grace_s=grace_s))


def require_shared_broker(config: BrokerConfigLike) -> str:
    """The broker kind, or ``ConfigError`` when it is the in-process stub (nothing would arrive)."""
    kind = broker_kind(config)
    if kind == "stub":
        raise ConfigError(
            "worker: ARCS_BROKER_URL is not set (or is stub://); a worker needs a shared broker: "
            "redis://HOST:6379/0 or amqp://USER:PASS@HOST:5672/"
        )
    return kind


def run_worker(
    spec: WorkerSpec,
    *,
    processes: int = 1,
    threads: int = 4,
    queues: Iterable[str] | None = None,
    grace_s: float = DEFAULT_GRACE_S,
) -> int:
    """``arcs worker``: serve in this process, or supervise ``processes`` children."""
    require_shared_broker(spec.broker)
    if processes < 1 or threads < 1:
        raise ConfigError("worker: --processes and --threads must be at least 1")
    wanted = sorted(set(queues)) if queues else None
    if processes == 1:
        return serve(spec, threads=threads, queues=wanted, grace_s=grace_s)
    return _supervise(spec, processes, threads, wanted, grace_s)


def _supervise(
    spec: WorkerSpec,
    processes: int,
    threads: int,
    queues: list[str] | None,
    grace_s: float,
) -> int:
    context = multiprocessing.get_context("spawn")
    stopping = threading.Event()

    def start(index: int) -> Any:
        child = context.Process(
            target=_child,
            args=(spec, threads, queues, grace_s),
            name=f"arcs-worker-{index}",
            daemon=False,
        )
        child.start()
        log.info("worker.child_started", index=index, pid=child.pid)
        return child

    def on_signal(_signum: int, _frame: object) -> None:
        stopping.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    children = [start(i) for i in range(processes)]
    restarts: list[float] = []
    status = 0
    while not stopping.wait(1.0):
        for index, child in enumerate(children):
            if child.exitcode is None:
                continue
            log.error("worker.child_died", index=index, pid=child.pid, exitcode=child.exitcode)
            now = time.monotonic()
            restarts = [t for t in restarts if now - t < 60] + [now]
            if len(restarts) > MAX_RESTARTS_PER_MINUTE:
                log.error("worker.giving_up", restarts_last_minute=len(restarts))
                stopping.set()
                status = 1
                break
            children[index] = start(index)
    for child in children:
        if child.exitcode is None and child.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGTERM)
    for child in children:
        child.join(grace_s + 10)
        if child.exitcode is None:
            log.error("worker.child_killed", pid=child.pid)
            child.kill()
            child.join(5)
    return status
