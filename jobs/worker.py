"""``arcs worker``: consume the queues and run the actors, in N processes of M threads.

One process (:func:`serve`) builds the broker (:func:`jobs.broker.make_broker`), makes it
dramatiq's global broker, declares the actors with a dependency factory and runs a
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
from typing import TYPE_CHECKING, Any

import structlog

from bot.errors import ArcsError, ConfigError
from bot.settings import Settings
from bot.store.store import Store, StoreUnavailable
from jobs.broker import (
    BrokerEnqueuer,
    BrokerUnavailable,
    broker_kind,
    close_broker,
    install_global,
    make_broker,
    ping_broker,
)
from jobs.logctx import DroppedJob, JobContextMiddleware

if TYPE_CHECKING:
    import dramatiq

    from jobs.pipeline import Deps
    from jobs.ports import GitHubGateway

log = structlog.get_logger("arcs.worker")

DepsFactory = Callable[[], "Deps"]
Wiring = Callable[[Settings, "dramatiq.Broker"], DepsFactory]
"""Builds, once per process, the factory the actors call for their dependencies."""

DEFAULT_GRACE_S = 30.0
MAX_RESTARTS_PER_MINUTE = 5


class NotWired(ConfigError):
    """A port of the pipeline has no real implementation in this deployment."""


def default_wiring(settings: Settings, broker: dramatiq.Broker) -> DepsFactory:
    """The production dependencies: the store, follow-up jobs on ``broker``, GitHub, the repair.

    - GitHub: :func:`bot.github.gateway.gateway_factory` (one gateway per job, closed by the
      pipeline after the job: its installation tokens are revoked);
    - repair: :class:`jobs.repair_service.FixRepairService` (``arcs fix`` on the job's checkout,
      in the runner ``ARCS_RUNNER`` names: bubblewrap with this worker's Python environment, or
      containers);
    - index: :class:`jobs.repair_service.RepoIndexService` (``RepoIndex`` under ``ARCS_HOME``;
      refreshes of one repository are serialized across workers through the store's database).

    The store is opened (and migrated) once per process; the dependencies are shared by the
    process's threads (the store is thread-safe). A deployment without App credentials still
    starts: each job then ends with status ``error`` and an event naming the missing setting.
    """
    from bot.store import open_store
    from jobs.pipeline import Deps
    from jobs.repair_service import FixRepairService, RepoIndexService

    store = open_store(settings)
    enqueuer = BrokerEnqueuer(broker)
    deps = Deps(
        settings=settings,
        store=store,
        github=_github_factory(settings),
        repair=FixRepairService(settings),
        enqueue=enqueuer.enqueue,
        enqueue_later=enqueuer.enqueue_later,
        index=RepoIndexService(settings, engine=store.engine),
    )
    return lambda: deps


def _github_factory(settings: Settings) -> Callable[[int | None], GitHubGateway]:
    """``gateway_factory(settings)``, or a factory that raises :class:`NotWired` (with the reason)
    when the App's credentials are missing or unusable."""
    from bot.github.gateway import gateway_factory

    try:
        return gateway_factory(settings)
    except ArcsError as exc:
        # Not logged here: every job names the reason in its `error` event (and the log), and
        # each child of a multi-process worker would say it again at once.
        reason = exc.message

        def unwired(_installation_id: int | None) -> GitHubGateway:
            raise NotWired(f"worker: no GitHub gateway: {reason}")

        return unwired


def _record_dropped(store: Store, dropped: DroppedJob) -> None:
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


def setup(
    settings: Settings, wiring: Wiring | None = None, *, broker: dramatiq.Broker | None = None
) -> tuple[dramatiq.Broker, DepsFactory]:
    """Build the broker, make it global, declare the actors; return the broker and the factory."""
    from jobs.actors import declare_actors

    broker = broker or make_broker(settings)
    install_global(broker)
    factory = (wiring or default_wiring)(settings, broker)

    def on_failure(dropped: DroppedJob) -> None:
        _record_dropped(factory().store, dropped)

    for middleware in broker.middleware:
        if isinstance(middleware, JobContextMiddleware) and middleware.on_failure is None:
            middleware.on_failure = on_failure
    declare_actors(broker, factory)
    return broker, factory


def serve(
    settings: Settings,
    *,
    threads: int = 4,
    queues: Iterable[str] | None = None,
    wiring: Wiring | None = None,
    stop: threading.Event | None = None,
    grace_s: float = DEFAULT_GRACE_S,
) -> int:
    """Run one worker process until ``stop`` is set (by SIGTERM/SIGINT in the main thread)."""
    import dramatiq

    stop = stop or threading.Event()
    try:
        broker, factory = setup(settings, wiring)
        ping_broker(broker)
    except (StoreUnavailable, BrokerUnavailable) as exc:
        raise ArcsError(f"worker: {exc}", exit_code=1) from exc
    previous = _handle_stop_signals(stop)
    wanted = set(queues) if queues else None
    worker = dramatiq.Worker(broker, queues=wanted, worker_threads=threads)
    worker.start()
    log.info("worker.started", broker=broker_kind(settings), threads=threads, queues=sorted(wanted or []))
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


def _child(
    settings: Settings, threads: int, queues: list[str] | None, wiring: Wiring | None, grace_s: float
) -> None:
    from bot.logging import configure_logging

    configure_logging(settings)
    raise SystemExit(serve(settings, threads=threads, queues=queues, wiring=wiring, grace_s=grace_s))


def require_shared_broker(settings: Settings) -> str:
    """The broker kind, or ``ConfigError`` when it is the in-process stub (nothing would arrive)."""
    kind = broker_kind(settings)
    if kind == "stub":
        raise ConfigError(
            "worker: ARCS_BROKER_URL is not set (or is stub://); a worker needs a shared broker: "
            "redis://HOST:6379/0 or amqp://USER:PASS@HOST:5672/"
        )
    return kind


def run_worker(
    settings: Settings,
    *,
    processes: int = 1,
    threads: int = 4,
    queues: Iterable[str] | None = None,
    wiring: Wiring | None = None,
    grace_s: float = DEFAULT_GRACE_S,
) -> int:
    """``arcs worker``: serve in this process, or supervise ``processes`` children."""
    require_shared_broker(settings)
    if processes < 1 or threads < 1:
        raise ConfigError("worker: --processes and --threads must be at least 1")
    wanted = sorted(set(queues)) if queues else None
    if processes == 1:
        return serve(settings, threads=threads, queues=wanted, wiring=wiring, grace_s=grace_s)
    return _supervise(settings, processes, threads, wanted, wiring, grace_s)


def _supervise(
    settings: Settings,
    processes: int,
    threads: int,
    queues: list[str] | None,
    wiring: Wiring | None,
    grace_s: float,
) -> int:
    context = multiprocessing.get_context("spawn")
    stopping = threading.Event()

    def start(index: int) -> Any:
        child = context.Process(
            target=_child,
            args=(settings, threads, queues, wiring, grace_s),
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
