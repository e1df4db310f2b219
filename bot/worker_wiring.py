"""The worker's composition root: settings -> the built values :mod:`jobs.worker` runs on.

``arcs worker`` (:mod:`bot.cli.worker_cmd`) calls :func:`worker_spec`; tests call
:func:`default_wiring` for the production dependencies. This is the only place the worker's store,
GitHub gateway and index service are built from :class:`~bot.settings.Settings`, so ``jobs``
never imports ``bot``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.errors import ArcsError, ConfigError
from bot.github.gateway import gateway_factory
from bot.logging import configure_logging
from bot.settings import Settings
from bot.store import open_store
from jobs.broker import BrokerConfig, BrokerEnqueuer
from jobs.index_jobs import RepoIndexService
from jobs.pipeline import Deps
from jobs.repair_service import FixRepairService
from jobs.wiring import llm_config
from jobs.worker import DepsFactory, WorkerSpec

if TYPE_CHECKING:
    import dramatiq

    from jobs.ports import GitHubGateway

__all__ = ["NotWired", "default_wiring", "worker_spec"]


class NotWired(ConfigError):
    """A port of the pipeline has no real implementation in this deployment."""


def worker_spec(settings: Settings) -> WorkerSpec:
    """What ``arcs worker`` runs on: the broker configuration, :func:`default_wiring` bound to
    ``settings``, and the logging configuration of each child process (all picklable: a
    multi-process worker ``spawn``s its children)."""
    return WorkerSpec(
        broker=BrokerConfig.of(settings),
        wiring=functools.partial(default_wiring, settings),
        on_start=functools.partial(configure_logging, settings),
    )


def default_wiring(settings: Settings, broker: dramatiq.Broker) -> DepsFactory:
    """The production dependencies: the store, follow-up jobs on ``broker``, GitHub, the repair.

    - GitHub: :func:`bot.github.gateway.gateway_factory` (one gateway per job, closed by the
      pipeline after the job: its installation tokens are revoked);
    - repair: :class:`jobs.repair_service.FixRepairService` (the repair engine on the job's checkout,
      in the runner ``ARCS_RUNNER`` names: bubblewrap with this worker's Python environment, or
      containers; the model and its key from :func:`jobs.wiring.llm_config`, as ``arcs fix``);
    - index: :class:`jobs.index_jobs.RepoIndexService` (``RepoIndex`` under ``ARCS_HOME``, one per
      repository; work on one repository is serialized across workers through the store's
      database). The repair reads the *same* service's index (``owner/name`` at the attempt's
      commit), never an index of its own checkout.

    The store is opened (and migrated) once per process; the dependencies are shared by the
    process's threads (the store is thread-safe). A deployment without App credentials still
    starts: each job then ends with status ``error`` and an event naming the missing setting.
    An unreachable database raises ``StoreUnavailable`` (a ``ConnectionError``: the worker
    reports it as one line).
    """
    store = open_store(settings)
    enqueuer = BrokerEnqueuer(broker)
    index = RepoIndexService(settings, engine=store.engine)
    deps = Deps(
        settings=settings,
        store=store,
        github=_github_factory(settings),
        repair=FixRepairService(settings, index=index, llm_config=llm_config(settings), history=store),
        enqueue=enqueuer.enqueue,
        enqueue_later=enqueuer.enqueue_later,
        index=index,
        history=store,
    )
    return lambda: deps


def _github_factory(settings: Settings) -> Callable[[int | None], GitHubGateway]:
    """``gateway_factory(settings)``, or a factory that raises :class:`NotWired` (with the reason)
    when the App's credentials are missing or unusable."""
    try:
        return gateway_factory(settings)
    except ArcsError as exc:
        # Not logged here: every job names the reason in its `error` event (and the log), and
        # each child of a multi-process worker would say it again at once.
        reason = exc.message

        def unwired(_installation_id: int | None) -> GitHubGateway:
            raise NotWired(f"worker: no GitHub gateway: {reason}")

        return unwired
