"""What changed in a bumped dependency: the application side of issue #27, item 2.

For one :class:`~jobs.repair.depupdate.detect.Bump`, both versions are fetched and unpacked
(:mod:`runners.distfetch`: download only, nothing built or run, cached per package and version)
and compared by the pure core: the Python API difference from source
(:mod:`jobs.repair.depupdate.compare`), the changelog sections between the versions and the
replacements they state (:mod:`jobs.repair.depupdate.changelog`). A version that cannot be
fetched leaves a note instead of failing the repair. npm packages are compared by their type
declarations' exports (:mod:`jobs.repair.depupdate.npmapi`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from jobs.repair.changes import ChangeSet
from jobs.repair.depupdate.changelog import between, find_changelog, replacements
from jobs.repair.depupdate.compare import diff_sources
from jobs.repair.depupdate.context import DependencyChange
from jobs.repair.depupdate.detect import Bump, bumps_in
from jobs.repair.depupdate.npmapi import diff_npm
from runners import wsfs
from runners.distfetch import DEFAULT_INDEX, FetchError, fetch, read_texts

FETCHABLE = ("pypi", "npm")
MAX_MANIFEST_BYTES = 30_000_000
"""Lock files of large monorepos run to megabytes; larger ones are not read."""


Fetch = Callable[[str, str, str], Path]
"""The fetch port: ``(ecosystem, package, version)`` -> the folder one version is unpacked in
(raises :class:`FetchError`). Live: :func:`distfetch_port`; tests give a local one."""


def distfetch_port(cache_dir: Path, index_url: str = DEFAULT_INDEX) -> Fetch:
    """The live fetch port: :func:`runners.distfetch.fetch` (download and unpack only, cached
    under ``cache_dir``)."""

    def fetch_root(ecosystem: str, package: str, version: str) -> Path:
        try:
            return fetch(ecosystem, package, version, cache_dir=cache_dir, index_url=index_url).root
        except OSError as exc:  # a download or unpack that broke off: a note, never a failed repair
            raise FetchError(f"{package} {version}: fetch failed ({type(exc).__name__})") from exc

    return fetch_root


def what_changed(
    bump: Bump,
    *,
    cache_dir: Path | None = None,
    index_url: str = DEFAULT_INDEX,
    fetch_root: Fetch | None = None,
) -> DependencyChange:
    """The API difference and changelog of ``bump`` (with notes for what could not be known).
    The versions come from ``fetch_root`` (None: :func:`distfetch_port` on ``cache_dir``)."""
    if bump.ecosystem not in FETCHABLE:
        return DependencyChange(bump, notes=(f"{bump.ecosystem} packages are not fetched",))
    if not bump.old or not bump.new:
        return DependencyChange(bump, notes=("the package was added or removed, not bumped",))
    if fetch_root is None:
        if cache_dir is None:
            raise ValueError("what_changed: a cache_dir or a fetch port is needed")
        fetch_root = distfetch_port(cache_dir, index_url)
    try:
        old = read_texts(fetch_root(bump.ecosystem, bump.package, bump.old))
        new = read_texts(fetch_root(bump.ecosystem, bump.package, bump.new))
    except FetchError as exc:
        return DependencyChange(bump, notes=(str(exc),))
    sections = tuple(between(find_changelog(new), bump.old, bump.new))
    notes: list[str] = []
    if not sections:
        notes.append("no changelog section between the versions in the distribution")
    if bump.ecosystem == "pypi":
        api = diff_sources(old, new, stated=replacements(sections))
    else:
        api = diff_npm(old, new, bump.package)
    return DependencyChange(bump, tuple(api), sections, tuple(notes))


def checkout_bumps(changes: ChangeSet, repo: Path) -> list[Bump]:
    """The dependency bumps in the change since the last green commit, the head side read from
    the checkout (through :mod:`runners.wsfs`) and the base side rebuilt from the diff."""
    return bumps_in(changes, lambda rel: wsfs.text_or_none(repo, rel, limit=MAX_MANIFEST_BYTES))


def bump_notices(bumps: list[Bump]) -> list[str]:
    """Trace/report lines: one per bump (``dependency update: markupsafe 2.0.1 -> 2.1.0 (…)``)."""
    return [f"dependency update: {b.describe()}" for b in bumps]


__all__ = ["FETCHABLE", "Fetch", "bump_notices", "checkout_bumps", "distfetch_port", "what_changed"]
