"""The worker's code indexes: one per repository (``owner/name``), refreshed, read by repairs, dropped.

:class:`RepoIndexService` is the worker's :class:`jobs.ports.IndexPort`:

- :meth:`~RepoIndexService.refresh` (the ``refresh_index`` job) brings the index of ``owner/name``
  to a checkout of it;
- :meth:`~RepoIndexService.open_for_attempt` gives a repair the *same* index, refreshed
  incrementally to the attempt's checkout (never a collection of its own: before #12 every
  LLM-tier attempt built a ``local:<checkout>`` collection from scratch, under no lock, that
  nothing reused or dropped);
- :meth:`~RepoIndexService.drop` (the ``drop_index`` job) deletes both collections, the manifest
  and the read snapshot of a repository that was removed or uninstalled.

The jobs themselves are :func:`refresh_index` and :func:`drop_index` (:func:`drop_index_job` in
the shape of :data:`jobs.pipeline.FUNCTIONS`).

Every operation on a repository's index runs under two locks: a process-wide thread lock (one
Qdrant client per process, from :mod:`indexing.registry`; the embedded store's writes are not
safe from several threads) and :func:`jobs.locks.repo_lock` (other processes and hosts sharing
the Qdrant server). Locks are taken **per call**, not for a whole attempt: a repair holds them
while it refreshes, and again for each retrieval query, before which it re-refreshes to its own
commit when the index moved meanwhile (another attempt's commit, a push to the default branch).
So a repair's evidence always comes from its commit, a default-branch refresh never waits for
more than one query, and concurrent repairs of one repository do not wait for each other's
whole run (which a shared lock held for the attempt, plan-12 §d.3, would impose). Queries run
under the exclusive lock too because a lazy index writes during a query (it embeds the chunks the
query needs and may rewrite the manifest).

A one-off sweep (:func:`indexing.retention.sweep_leftover_checkouts`) runs at the first index
operation of each service: it drops the ``local:`` indexes that older versions built on job
checkouts that are gone, and logs how many (``index.swept``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from indexing.config import IndexConfig
from indexing.index import RepoIndex
from indexing.registry import process_registry
from indexing.retention import drop_repo_index, index_files, is_local_repo_id, sweep_leftover_checkouts
from jobs.locks import DEFAULT_TIMEOUT_S, repo_lock
from jobs.logctx import set_outcome
from jobs.messages import DropIndex, Envelope, RefreshIndex
from jobs.run import Deps, closing
from runners.errors import ConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from indexing.model import Query, SearchHit
    from indexing.retriever import HybridRetriever
    from indexing.store import QdrantStore
    from jobs.ports import IndexService

log = structlog.get_logger("arcs.index_jobs")

__all__ = [
    "AttemptRetriever",
    "HasIndex",
    "IndexSettings",
    "RepoIndexService",
    "drop_index",
    "drop_index_job",
    "refresh_index",
    "snapshot_id",
]


class IndexSettings(Protocol):
    """What :class:`RepoIndexService` reads from the settings (``bot.settings.Settings`` conforms)."""

    def index_config(self) -> IndexConfig:
        """The indexing configuration."""
        ...

    @property
    def sqlalchemy_url(self) -> str:
        """The store's database URL (PostgreSQL: the repository locks are advisory locks there)."""
        ...


@dataclass(frozen=True, slots=True)
class _LockTarget:
    """The :class:`jobs.locks.LockSettings` of a service built from plain values."""

    sqlalchemy_url: str
    index_dir: Path


def snapshot_id(commit: str, embedder: str, files: int, chunks: int) -> str:
    """The index snapshot a trace records (commit, embedder, size): what its evidence came from."""
    return f"{commit[:12]}:{embedder}:{files}f{chunks}c"


class RepoIndexService:
    """The worker's index port (see the module docstring).

    ``config`` is the settings (or an :class:`IndexConfig`, then ``database_url`` says where the
    locks live: PostgreSQL advisory locks, else lock files beside the manifests). ``engine``, the
    store's, gives the advisory locks their connections when it is PostgreSQL.
    """

    def __init__(
        self,
        config: IndexSettings | IndexConfig,
        *,
        engine: Engine | None = None,
        lock_timeout_s: float | None = None,
        database_url: str | None = None,
    ) -> None:
        if isinstance(config, IndexConfig):
            self.config = config
            url = database_url or ""
        else:
            self.config = config.index_config()
            url = database_url or config.sqlalchemy_url
        self.engine = engine
        self.lock_timeout_s = DEFAULT_TIMEOUT_S if lock_timeout_s is None else lock_timeout_s
        self._lock_target = _LockTarget(url, self.config.index_dir)
        self._lock = threading.Lock()
        self._swept = False

    # -- locking -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def guard(self, repo: str) -> Iterator[None]:
        """Hold the process's index lock and ``repo``'s cross-process lock (see the module docstring)."""
        target: Any = self._lock_target
        if self.engine is not None and self.engine.dialect.name == "postgresql":
            target = self.engine
        with (
            self._lock,
            repo_lock(target, repo, timeout_s=self.lock_timeout_s, lock_dir=self.config.index_dir),
        ):
            self._sweep_once()
            yield

    def store(self) -> QdrantStore:
        """The process's Qdrant client (:mod:`indexing.registry`)."""
        cfg = self.config
        return process_registry().store(url=cfg.qdrant_url, path=cfg.qdrant_path, api_key=cfg.qdrant_api_key)

    def _sweep_once(self) -> None:
        # Under the process lock; once per service (the worker builds one per process).
        if self._swept:
            return
        self._swept = True
        try:
            dropped = sweep_leftover_checkouts(self.store(), self.config)
        except Exception as exc:  # the sweep is housekeeping: it never fails a job
            log.warning("index.sweep_failed", error=" ".join(str(exc).split())[:300])
            return
        if dropped:
            log.info("index.swept", dropped=dropped)

    def _open(self, repo: str, workdir: Path) -> RepoIndex:
        if is_local_repo_id(repo):
            raise ConfigError(f"index: the worker indexes repositories as owner/name, not {repo!r}")
        return RepoIndex.open(self.config, workdir, repo_id=repo, shared=True)

    # -- the port ------------------------------------------------------------------------------

    def refresh(self, repo: str, workdir: Path, *, full: bool) -> Mapping[str, Any]:
        """Index the checkout ``workdir`` of ``repo`` (incrementally unless ``full``)."""
        with self.guard(repo), self._open(repo, workdir) as index:
            stats = index.refresh(full=full)
        return {
            "files": stats.files,
            "chunks": stats.chunks,
            "embedded": stats.embedded,
            "cached": stats.cached,
            "changed_files": stats.changed_files,
            "removed_files": stats.removed_files,
            "seconds": round(stats.seconds, 3),
            "commit": stats.commit,
            "full": stats.full,
        }

    def open_for_attempt(self, repo_id: str, workdir: Path, commit: str) -> AttemptRetriever:
        """The index of ``repo_id`` refreshed to the checkout ``workdir`` (at ``commit``), as a
        retriever for one repair. Close it when the repair ends. Raises :class:`ConfigError` (an
        ``ArcsError``) when the index cannot be opened or the lock not taken in time."""
        handle = AttemptRetriever(self, repo_id, Path(workdir), commit)
        handle.open()
        return handle

    def drop(self, repo: str) -> bool:
        """Delete ``repo``'s collections, manifest and snapshot; True when there was an index."""
        with self.guard(repo):
            dropped = drop_repo_index(self.store(), self.config, repo)
        log.info("index.dropped", existed=dropped)
        return dropped


class AttemptRetriever:
    """A repair's view of its repository's index, kept at the repair's commit.

    Implements :class:`indexing.retriever.Retriever`. Each query takes the locks, re-refreshes
    from the attempt's checkout when the manifest changed since this attempt last saw it, and
    asks the index (see the module docstring).
    """

    def __init__(self, service: RepoIndexService, repo_id: str, workdir: Path, commit: str) -> None:
        self.service = service
        self.repo_id = repo_id
        self.workdir = workdir
        self.commit = commit
        self.snapshot = ""
        self.refreshes = 0
        """Refreshes after the first (the index had moved to another commit in between)."""
        self._index: RepoIndex | None = None
        self._retriever: HybridRetriever | None = None
        self._seen: tuple[int, int, int] | None = None
        self._manifest = index_files(service.config, repo_id)[0]

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self._manifest.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _refresh(self) -> None:
        assert self._index is not None
        stats = self._index.refresh()
        if self.commit and not stats.commit.startswith(self.commit):
            log.warning("index.attempt_commit_mismatch", want=self.commit[:12], got=stats.commit[:12])
        self._retriever = self._index.retriever()
        self.snapshot = snapshot_id(stats.commit, self.service.config.embedder, stats.files, stats.chunks)

    def open(self) -> None:
        """Open the index and refresh it to the attempt's checkout."""
        with self.service.guard(self.repo_id):
            self._index = self.service._open(self.repo_id, self.workdir)
            try:
                self._refresh()
            except BaseException:
                self.close()
                raise
            self._seen = self._stamp()

    @contextlib.contextmanager
    def _current(self) -> Iterator[HybridRetriever]:
        with self.service.guard(self.repo_id):
            if self._index is None:
                raise ConfigError("index: this attempt's index is closed")
            if self._stamp() != self._seen:
                self.refreshes += 1
                self._refresh()
            assert self._retriever is not None
            try:
                yield self._retriever
            finally:
                self._seen = self._stamp()  # a lazy query may rewrite the manifest: that is us

    def search(self, query: Query) -> list[SearchHit]:
        """Ranked chunks for ``query`` from the attempt's commit."""
        with self._current() as retriever:
            return retriever.search(query)

    def hierarchical(self, query: Query, depth: int = 3) -> list[SearchHit]:
        """Top-down search from the attempt's commit."""
        with self._current() as retriever:
            return retriever.hierarchical(query, depth)

    def close(self) -> None:
        """Release the index (the shared store and embedder stay open for the process)."""
        index, self._index, self._retriever = self._index, None, None
        if index is not None:
            index.close()

    def __enter__(self) -> AttemptRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HasIndex(Protocol):
    """The job dependencies :func:`drop_index` uses (the worker's ``Deps`` conforms)."""

    @property
    def index(self) -> IndexService | None:
        """The index port (None: indexing is off)."""
        ...


def refresh_index(deps: Deps, job: Envelope, *, message_id: str | None = None) -> str:
    """The ``refresh_index`` job: bring ``owner/name``'s index to the pushed commit (or the
    default branch's head) in a fresh clone. Idempotent: no attempt row. Returns the outcome word
    (``refreshed``, or ``skipped`` when the deployment has no index)."""
    if deps.index is None:
        log.info("index.disabled")
        set_outcome("skipped")
        return "skipped"
    message = job.expect(RefreshIndex)
    with closing(deps.github(message.installation_id)) as gh, deps.scratch() as scratch:
        sha = message.after or gh.get_branch_head(message.repo, None).sha
        workdir = scratch / "repo"
        workdir.mkdir()
        gh.clone(message.repo, str(sha), workdir)
        stats = deps.index.refresh(message.repo, workdir, full=message.mode == "full")
    log.info("index.refreshed", sha=str(sha)[:12], **{k: v for k, v in stats.items() if k != "event"})
    set_outcome("refreshed")
    return "refreshed"


def drop_index_job(deps: HasIndex, job: Envelope, *, message_id: str | None = None) -> str:
    """:func:`drop_index` as a job function (:data:`jobs.pipeline.FUNCTIONS`): decodes the
    message and records the outcome."""
    outcome = drop_index(deps, job.expect(DropIndex))
    set_outcome(outcome)
    return outcome


def drop_index(deps: HasIndex, message: DropIndex) -> str:
    """The ``drop_index`` job: drop ``message.repo``'s index. Returns the job's outcome word
    (``dropped``, ``absent``, or ``skipped`` when the deployment has no index port that drops)."""
    drop = getattr(deps.index, "drop", None)
    if not callable(drop):
        log.info("index.drop_unwired", repo=message.repo)
        return "skipped"
    existed = bool(drop(message.repo))
    log.info("index.drop", repo=message.repo, reason=message.reason, existed=existed)
    return "dropped" if existed else "absent"


if TYPE_CHECKING:
    from jobs.ports import IndexPort

    def _conforms(service: RepoIndexService) -> IndexPort:
        return service  # mypy checks that the service is the worker's index port
