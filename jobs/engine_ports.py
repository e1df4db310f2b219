"""The ports a repair runs with, as the engine wires them: the runner, the index openers, the
toolchains (:mod:`jobs.engine` runs the loop on them).

:func:`make_runner` builds the runner the deployment chose (:class:`RunnerConfig`);
:func:`attempt_index` opens the repository's own index (``owner/name`` at the attempt's commit,
through :class:`jobs.ports.IndexPort`: the worker) and :func:`local_index` a local folder's
(``local:<path>``: ``arcs fix`` only). Nothing here reads ``.arcs.yml`` or the settings.
"""

from __future__ import annotations

import contextlib
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from indexing.config import IndexConfig
from runners import wsfs
from runners.base import Runner
from runners.errors import ArcsError
from runners.limits import SandboxLimits

if TYPE_CHECKING:
    from indexing.retriever import Retriever
    from jobs.ports import IndexPort

Progress = Callable[[str], None]
IndexOpener = Callable[[Path, Progress], contextlib.AbstractContextManager[tuple["Retriever | None", str]]]
"""Opens the index for the checkout at a path: yields (retriever or None, snapshot id); a failure
is a notice (``retrieval off: …``) given to the progress callback, never an exception."""
RunnerFactory = Callable[[bool, tuple[Path, ...], tuple[str, ...]], Runner]
"""(unsafe_no_sandbox, toolchains, ``.arcs.yml`` setup_network.allow) -> the runner."""


class RunnerSettings(Protocol):
    """The settings fields that choose the runner (``bot.settings.Settings`` conforms)."""

    @property
    def runner(self) -> str: ...
    @property
    def runner_image(self) -> str | None: ...
    @property
    def runner_runtime(self) -> str | None: ...
    @property
    def setup_network(self) -> str: ...
    @property
    def setup_network_allow(self) -> tuple[str, ...]: ...
    def sandbox_limits(self) -> SandboxLimits:
        """The per-run sandbox limits (``ARCS_SANDBOX_*``)."""
        ...


@dataclass(frozen=True, slots=True)
class RunnerConfig:
    """Which runner test commands run in (``ARCS_RUNNER``…), as plain values."""

    kind: str = "bubblewrap"
    image: str | None = None
    runtime: str | None = None
    setup_network: str = "registries"
    setup_network_allow: tuple[str, ...] = ()
    limits: SandboxLimits = field(default_factory=SandboxLimits)

    @classmethod
    def of(cls, settings: RunnerSettings) -> RunnerConfig:
        """From the settings."""
        return cls(
            kind=settings.runner,
            image=settings.runner_image,
            runtime=settings.runner_runtime,
            setup_network=settings.setup_network,
            setup_network_allow=tuple(settings.setup_network_allow),
            limits=settings.sandbox_limits(),
        )


def make_runner(
    config: RunnerConfig, unsafe: bool, toolchains: tuple[Path, ...], setup_allow: tuple[str, ...] = ()
) -> Runner:
    """The runner ``config`` chooses; ``unsafe`` (``--unsafe-no-sandbox``) wins.

    ``setup_allow`` is the repository's ``.arcs.yml`` ``setup_network.allow``.
    """
    from runners import factory
    from runners.egress import EgressPolicy

    return factory.make_runner(
        unsafe_no_sandbox=unsafe,
        toolchain_paths=toolchains,
        kind=config.kind,  # type: ignore[arg-type]  # checked by make_runner (one line if unknown)
        image=config.image,
        runtime=config.runtime,
        setup_network=EgressPolicy.build(config.setup_network, config.setup_network_allow, setup_allow),
        limits=config.limits,
    )


def local_index(config: IndexConfig) -> IndexOpener:
    """The CLI's index of a local folder (keyed by its path, ``local:<path>``). Never in the worker."""

    @contextlib.contextmanager
    def open_index(repo: Path, notify: Progress) -> Iterator[tuple[Retriever | None, str]]:
        from indexing.index import RepoIndex
        from jobs.index_jobs import snapshot_id

        try:
            index = RepoIndex.open(config, repo)
        except ArcsError as exc:
            notify(f"retrieval off: {exc.message}")
            yield None, ""
            return
        with index:
            try:
                stats = index.refresh()
                retriever = index.retriever()
            except ArcsError as exc:
                notify(f"retrieval off: {exc.message}")
                yield None, ""
                return
            yield retriever, snapshot_id(stats.commit, config.embedder, stats.files, stats.chunks)

    return open_index


def attempt_index(port: IndexPort, repo_id: str, commit: str) -> IndexOpener:
    """The worker's index: ``repo_id``'s (``owner/name``) at ``commit``, through ``port``."""

    @contextlib.contextmanager
    def open_index(repo: Path, notify: Progress) -> Iterator[tuple[Retriever | None, str]]:
        try:
            handle = port.open_for_attempt(repo_id, repo, commit)
        except ArcsError as exc:
            notify(f"retrieval off: {exc.message}")
            yield None, ""
            return
        with contextlib.closing(handle):
            yield handle, handle.snapshot

    return open_index


def repo_toolchains(repo: Path) -> tuple[Path, ...]:
    """The repository's own Python environment, when it has an obvious one (``.venv/`` or
    ``venv/`` with a ``bin/python``): exposed read-only in the sandbox, its ``bin`` first on PATH.

    The folder and its ``pyvenv.cfg`` must be real (:func:`runners.wsfs.entry_stat`, no link
    followed): a repository that commits ``.venv -> /some/host/venv`` does not get that host
    folder bound into its sandbox."""
    for name in (".venv", "venv"):
        env = repo / name
        folder = wsfs.entry_stat(repo, name)
        cfg = wsfs.entry_stat(repo, f"{name}/pyvenv.cfg")
        if folder is None or not stat.S_ISDIR(folder.st_mode) or cfg is None or not stat.S_ISREG(cfg.st_mode):
            continue
        if (env / "bin" / "python").exists():
            return (env.absolute(),)
    return ()


def describe_toolchain(
    runner: object, toolchains: tuple[Path, ...], repo: Path, *, image: str | None = None
) -> str:
    """One line naming the toolchain the sandbox uses (printed and recorded in the trace)."""
    name = str(getattr(runner, "name", "") or type(runner).__name__)
    if name == "docker":
        return f"docker: the runner image {image or '?'}"
    parts = [
        f"{path} (the repository's own environment)" if path.is_relative_to(repo) else str(path)
        for path in toolchains
    ]
    parts.append(f"python {sys.version_info.major}.{sys.version_info.minor} ({sys.base_prefix})")
    if (repo / "node_modules" / ".bin").is_dir():
        parts.append("node_modules/.bin")
    return f"{name}: " + ", ".join(parts)


def worker_toolchains(prefix: str = sys.prefix, base_prefix: str = sys.base_prefix) -> tuple[Path, ...]:
    """The worker's own Python environment (a virtual environment), to expose in the sandbox."""
    from runners.toolchains import toolchain_paths

    # environ={}: library code does not read the environment; the interpreter's prefix suffices.
    return tuple(toolchain_paths(prefix=prefix, base_prefix=base_prefix, environ={}))


def changed_files(workdir: Path, paths: list[str]) -> dict[str, str | None]:
    """The text of each path under ``workdir`` after the fix (``None``: deleted).

    Read through :mod:`runners.wsfs`: a link, FIFO or oversized file there raises (one line,
    an ``OSError``) rather than being published as deleted."""
    out: dict[str, str | None] = {}
    for rel in paths:
        if wsfs.entry_stat(workdir, rel) is None:
            out[rel] = None
        else:
            out[rel] = wsfs.read_text(workdir, rel, limit=wsfs.SOURCE_LIMIT, whole=True)
    return out


__all__ = [
    "IndexOpener",
    "Progress",
    "RunnerConfig",
    "RunnerFactory",
    "RunnerSettings",
    "attempt_index",
    "changed_files",
    "describe_toolchain",
    "local_index",
    "make_runner",
    "repo_toolchains",
    "worker_toolchains",
]
