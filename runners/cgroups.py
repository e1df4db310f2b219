"""CPU, memory and process limits for one sandboxed command tree, through cgroups (v2 or v1).

Each run gets a cgroup of its own, ``<parent>/<group>/run-<pid>-<n>-<hex>``, in every hierarchy
that holds one of the controllers in use (``cpu``, ``memory``, ``pids``): one directory on a
cgroup v2 host, one per controller mount on a v1 host, both on a hybrid one. ``<group>``
(``arcs-sandboxes`` by default) is shared by every sandbox of the worker processes in
``<parent>`` and carries the cap on their processes *together* (``pids.max``).

``<parent>`` is the cgroup this process is in (from ``/proc/self/cgroup``), or the one the
operator names. On cgroup v2 the controllers must be enabled in its ``cgroup.subtree_control``;
a non-root cgroup that holds processes cannot do that ("no internal processes"), so, as a
delegated service must, the processes of ``<parent>`` are first moved into a leaf
``<parent>/arcs-worker``. Whatever cannot be set up is reported by :class:`Cgroups` (``reason``)
and that limit falls back to the rlimits of :mod:`runners.limits`.

A command enters its cgroup *before* bubblewrap starts: :meth:`RunCgroup.enter_argv` prefixes
the command line with a tiny ``sh`` that writes ``0`` (itself) into each ``cgroup.procs`` and then
``exec``s bubblewrap, so every process the sandbox ever forks is born inside the cgroup.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import signal
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runners.errors import ArcsError

Controller = Literal["cpu", "memory", "pids"]
CONTROLLERS: tuple[Controller, ...] = ("cpu", "memory", "pids")
CPU_PERIOD_US = 100_000
DEFAULT_GROUP = "arcs-sandboxes"
_LEAF = "arcs-worker"
_RUN_PREFIX = "run-"
_COUNTER = itertools.count(1)
# Shell that moves itself into each cgroup.procs named before "--", then becomes the command.
_ENTER = (
    'while [ "$1" != -- ]; do echo 0 > "$1" || '
    '{ echo "arcs-sandbox: could not enter the cgroup $1" >&2; exit 125; }; shift; done; shift; exec "$@"'
)


class CgroupError(ArcsError):
    """A run's cgroup could not be created or configured."""


@dataclass(frozen=True, slots=True)
class CgroupSpec:
    """One run's limits; None leaves a limit off."""

    cpus: float | None = None
    """CPU time per wall second, in cores (``cpu.max`` / ``cpu.cfs_quota_us``)."""
    memory_mb: int | None = None
    """Memory of the whole tree, page cache and tmpfs included; no swap."""
    processes: int | None = None
    """Processes and threads of the whole tree (``pids.max``)."""


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """One mounted hierarchy we use: its version, its shared group folder and its controllers."""

    version: Literal[1, 2]
    group: Path
    controllers: frozenset[Controller]


@dataclass(frozen=True, slots=True)
class Cgroups:
    """The cgroup mechanism this host offers (found once by :func:`detect`)."""

    hierarchies: tuple[Hierarchy, ...] = ()
    reason: str = ""
    """Why a wanted controller is missing ('' when every wanted controller is available)."""

    def has(self, controller: Controller) -> bool:
        """Whether runs get a ``controller`` cgroup."""
        return any(controller in h.controllers for h in self.hierarchies)

    def version_of(self, controller: Controller) -> Literal[1, 2] | None:
        """The cgroup version that carries ``controller`` (None: not available)."""
        return next((h.version for h in self.hierarchies if controller in h.controllers), None)

    def create(self, spec: CgroupSpec) -> RunCgroup:
        """Make and configure one run's cgroups; raise :class:`CgroupError` (nothing left behind)."""
        name = f"{_RUN_PREFIX}{os.getpid()}-{next(_COUNTER)}-{secrets.token_hex(3)}"
        run = RunCgroup(tuple(_RunDir(h.version, h.group / name, h.controllers) for h in self.hierarchies))
        try:
            for part in run.parts:
                _mkdir(part.path)
                part.configure(spec)
        except OSError as exc:
            run.remove()
            raise CgroupError(f"could not set up the sandbox's cgroup {name}: {exc.strerror or exc}") from exc
        return run

    def sweep_stale(self) -> int:
        """Remove empty run cgroups left by worker processes that no longer exist; return how many."""
        removed = 0
        for h in self.hierarchies:
            with contextlib.suppress(OSError):
                for entry in h.group.iterdir():
                    owner = entry.name.removeprefix(_RUN_PREFIX).split("-", 1)[0]
                    if not entry.name.startswith(_RUN_PREFIX) or not owner.isdigit() or _alive(int(owner)):
                        continue
                    with contextlib.suppress(OSError):
                        _rmdir(entry)  # refused while processes remain: those are not ours to kill
                        removed += 1
        return removed


@dataclass(frozen=True, slots=True)
class _RunDir:
    version: Literal[1, 2]
    path: Path
    controllers: frozenset[Controller]

    def configure(self, spec: CgroupSpec) -> None:
        if "cpu" in self.controllers and spec.cpus is not None:
            quota = max(1000, round(spec.cpus * CPU_PERIOD_US))
            if self.version == 2:
                _write(self.path / "cpu.max", f"{quota} {CPU_PERIOD_US}")
            else:
                _write(self.path / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(self.path / "cpu.cfs_quota_us", str(quota))
        if "memory" in self.controllers and spec.memory_mb is not None:
            limit = str(spec.memory_mb << 20)
            if self.version == 2:
                _write(self.path / "memory.max", limit)
                _write_if_present(self.path / "memory.swap.max", "0")
                # On an OOM kill the whole run goes, not just the largest process.
                _write_if_present(self.path / "memory.oom.group", "1")
            else:
                _write(self.path / "memory.limit_in_bytes", limit)
                # memory+swap equal to memory: no swap (absent when the kernel has no swap accounting).
                _write_if_present(self.path / "memory.memsw.limit_in_bytes", limit)
        if "pids" in self.controllers and spec.processes is not None:
            _write(self.path / "pids.max", str(spec.processes))


@dataclass(slots=True)
class RunCgroup:
    """One run's cgroups (one folder per hierarchy): enter, watch, read, remove."""

    parts: tuple[_RunDir, ...]
    _removed: bool = field(default=False)

    def enter_argv(self, argv: Sequence[str], *, shell: str = "/bin/sh") -> list[str]:
        """``argv`` behind a shell that enters this run's cgroups and then ``exec``s it."""
        procs = [str(part.path / "cgroup.procs") for part in self.parts]
        return [shell, "-c", _ENTER, "arcs-cgroup", *procs, "--", *argv]

    def _part(self, controller: Controller) -> _RunDir | None:
        return next((p for p in self.parts if controller in p.controllers), None)

    def oom_kills(self) -> int:
        """Processes the kernel killed because the run reached its memory limit."""
        part = self._part("memory")
        if part is None:
            return 0
        name = "memory.events" if part.version == 2 else "memory.oom_control"
        return _keyed(part.path / name).get("oom_kill", 0)

    def fork_refusals(self) -> int:
        """Forks refused because the run reached its process limit (``pids.events`` ``max``)."""
        part = self._part("pids")
        return 0 if part is None else _keyed(part.path / "pids.events").get("max", 0)

    def pids(self) -> list[int]:
        """Processes in the run's cgroups now (as this process's pid namespace sees them)."""
        found: set[int] = set()
        for part in self.parts:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(x) for x in (part.path / "cgroup.procs").read_text().split())
        found.discard(0)
        return sorted(found)

    def usage(self) -> dict[str, int]:
        """What the kernel counted for the run: peaks, throttling, kills (names as in the result)."""
        out: dict[str, int] = {}
        if (part := self._part("pids")) is not None:
            with contextlib.suppress(OSError, ValueError):
                out["pids_peak"] = int((part.path / "pids.peak").read_text())
            out["pids_refused"] = self.fork_refusals()
        if (part := self._part("memory")) is not None:
            peak = "memory.peak" if part.version == 2 else "memory.max_usage_in_bytes"
            with contextlib.suppress(OSError, ValueError):
                out["memory_peak_bytes"] = int((part.path / peak).read_text())
            out["oom_kills"] = self.oom_kills()
        if (part := self._part("cpu")) is not None:
            stat = _keyed(part.path / "cpu.stat")
            out["cpu_periods"] = stat.get("nr_periods", 0)
            out["cpu_throttled"] = stat.get("nr_throttled", 0)
            throttled = stat.get("throttled_usec", stat.get("throttled_time", 0) // 1000)
            out["cpu_throttled_us"] = throttled
        return out

    def remove(self) -> None:
        """Kill whatever is left in the run's cgroups and remove them (idempotent)."""
        if self._removed:
            return
        for part in self.parts:
            if part.version == 2:
                _write_if_present(part.path / "cgroup.kill", "1")
        deadline = time.monotonic() + 5.0
        pending = [p.path for p in self.parts]
        while pending:
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            left = []
            for path in pending:
                try:
                    _rmdir(path)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        if exc.errno != errno.EBUSY:
                            raise CgroupError(f"could not remove the cgroup {path}: {exc.strerror}") from exc
                        raise CgroupError(f"processes outlived the sandbox in {path}") from exc
                    left.append(path)
            pending = left
            if pending:
                time.sleep(0.01)
        self._removed = True


# --------------------------------------------------------------------------- detection


def detect(
    *,
    want: Iterable[Controller] = CONTROLLERS,
    parent: Path | None = None,
    group: str = DEFAULT_GROUP,
    total_processes: int | None = None,
    proc: Path = Path("/proc"),
    dry_run: bool = False,
) -> Cgroups:
    """Find (and prepare) the cgroups ARCS can create per run; never raises.

    ``parent``: the cgroup v2 folder to nest under (default: this process's own cgroup; v1
    hierarchies always use the process's own). ``total_processes`` caps the processes of all sandboxes in ``group`` together.
    ``dry_run`` changes nothing (``arcs doctor``): permissions are checked, not tried.
    """
    wanted = [c for c in CONTROLLERS if c in set(want)]
    if not wanted:
        return Cgroups(reason="no cgroup limit is configured")
    try:
        mounts = _mounts(proc / "self" / "mountinfo")
        own = _own_paths(proc / "self" / "cgroup")
    except OSError as exc:
        return Cgroups(reason=f"cannot read this process's cgroups: {exc.strerror or exc}")
    hierarchies: list[Hierarchy] = []
    problems: list[str] = []
    left = list(wanted)
    v2 = next((m for m in mounts if m.version == 2), None)
    if parent is not None and v2 is None:
        problems.append(f"{parent} was named as the cgroup parent, but this host has no cgroup v2")
    if v2 is not None and "" in own:
        base = parent or v2.folder_of(own[""])
        if base is not None and parent is None and base.name == _LEAF:
            base = base.parent  # an earlier detect moved this process into our own leaf
        if base is not None:
            try:
                got = _prepare_v2(base, group, left, total_processes, dry_run=dry_run)
            except OSError as exc:
                problems.append(f"cgroup v2 at {base}: {exc.strerror or exc}")
            else:
                if got:
                    hierarchies.append(Hierarchy(2, base / group, frozenset(got)))
                    left = [c for c in left if c not in got]
    for controller in list(left):
        mount = next((m for m in mounts if m.version == 1 and controller in m.controllers), None)
        if mount is None:
            continue
        key = ",".join(sorted(mount.controllers))
        own_path = own.get(key) or next((p for k, p in own.items() if controller in k.split(",")), None)
        base = mount.folder_of(own_path) if own_path else None
        if base is None:
            continue
        taken = [c for c in left if c in mount.controllers]
        try:
            _prepare_v1(base, group, taken, total_processes, dry_run=dry_run)
        except OSError as exc:
            problems.append(f"cgroup v1 {controller} at {base}: {exc.strerror or exc}")
            continue
        hierarchies.append(Hierarchy(1, base / group, frozenset(taken)))
        left = [c for c in left if c not in taken]
    if left:
        missing = ", ".join(left)
        problems.insert(0, f"no writable cgroup offers {missing}")
    return Cgroups(tuple(hierarchies), "; ".join(problems))


@dataclass(frozen=True, slots=True)
class _Mount:
    version: Literal[1, 2]
    point: Path
    root: str
    controllers: frozenset[str]

    def folder_of(self, cgroup_path: str) -> Path | None:
        """The folder of ``cgroup_path`` (as /proc/self/cgroup names it) under this mount."""
        root = self.root.rstrip("/")
        if cgroup_path != root and not cgroup_path.startswith(root + "/"):
            return None
        return self.point / cgroup_path[len(root) :].lstrip("/")


def _mounts(mountinfo: Path) -> list[_Mount]:
    found: list[_Mount] = []
    for line in mountinfo.read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        point = Path(fields[4].replace("\\040", " "))
        if tail[0] == "cgroup2":
            found.append(_Mount(2, point, fields[3], frozenset()))
        else:
            options = frozenset(tail[2].split(","))
            found.append(_Mount(1, point, fields[3], frozenset(c for c in CONTROLLERS if c in options)))
    return found


def _own_paths(cgroup_file: Path) -> dict[str, str]:
    """``{controllers: path}`` from /proc/self/cgroup; the v2 entry under ''."""
    own: dict[str, str] = {}
    for line in cgroup_file.read_text().splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            own[parts[1]] = parts[2]
    return own


def _prepare_v2(
    base: Path, group: str, wanted: Sequence[Controller], total: int | None, *, dry_run: bool = False
) -> list[Controller]:
    available = set((base / "cgroup.controllers").read_text().split())
    got = [c for c in wanted if c in available]
    if not got:
        return []
    if dry_run:
        _check_access(base / group if (base / group).is_dir() else base, "cgroup.subtree_control")
        return got
    enabled = set((base / "cgroup.subtree_control").read_text().split())
    if not set(got) <= enabled:
        enable = " ".join(f"+{c}" for c in got)
        try:
            _write(base / "cgroup.subtree_control", enable)
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            _evacuate(base)
            _write(base / "cgroup.subtree_control", enable)
    shared = base / group
    with contextlib.suppress(FileExistsError):
        _mkdir(shared)
    _write(shared / "cgroup.subtree_control", " ".join(f"+{c}" for c in got))
    if "pids" in got and total is not None:
        _write(shared / "pids.max", str(total))
    _probe(shared, 2, got)
    return got


def _evacuate(base: Path) -> None:
    """Move the processes of ``base`` into the leaf ``base/arcs-worker`` (v2 'no internal processes')."""
    leaf = base / _LEAF
    with contextlib.suppress(FileExistsError):
        _mkdir(leaf)
    for _ in range(10):  # processes may fork while we move them
        pids = (base / "cgroup.procs").read_text().split()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                _write(leaf / "cgroup.procs", pid)


def _prepare_v1(
    base: Path, group: str, controllers: Sequence[Controller], total: int | None, *, dry_run: bool = False
) -> None:
    shared = base / group
    if dry_run:
        _check_access(shared if shared.is_dir() else base, "cgroup.procs")
        return
    with contextlib.suppress(FileExistsError):
        _mkdir(shared)
    if "pids" in controllers and total is not None:
        _write(shared / "pids.max", str(total))
    _probe(shared, 1, controllers)


def _check_access(folder: Path, control: str) -> None:
    """Raise PermissionError unless this process may create cgroups in ``folder`` and move into them."""
    if not (os.access(folder, os.W_OK | os.X_OK) and os.access(folder / control, os.W_OK)):
        raise PermissionError(errno.EACCES, "not writable by this user", str(folder))


def _probe(shared: Path, version: Literal[1, 2], controllers: Sequence[Controller]) -> None:
    """Create, configure and remove one throwaway run cgroup: the permissions really suffice."""
    trial = _RunDir(version, shared / f"probe-{os.getpid()}-{secrets.token_hex(3)}", frozenset(controllers))
    _mkdir(trial.path)
    try:
        trial.configure(CgroupSpec(cpus=1.0, memory_mb=64, processes=16))
    finally:
        _rmdir(trial.path)


# --------------------------------------------------------------------------- small file helpers


def _mkdir(path: Path) -> None:
    # The kernel fills a new cgroup folder with its files (tests replace this to fake that).
    path.mkdir(mode=0o755)


def _rmdir(path: Path) -> None:
    # A cgroup folder goes with its control files; EBUSY while processes remain.
    path.rmdir()


def _write(path: Path, value: str) -> None:
    # O_TRUNC is not needed (and not allowed on some kernfs files); one write call per value.
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _write_if_present(path: Path, value: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        _write(path, value)


def _keyed(path: Path) -> dict[str, int]:
    """``key value`` lines (memory.events, pids.events, cpu.stat, memory.oom_control) as ints."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                out[key] = int(value)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = [
    "CONTROLLERS",
    "DEFAULT_GROUP",
    "CgroupError",
    "CgroupSpec",
    "Cgroups",
    "Controller",
    "Hierarchy",
    "RunCgroup",
    "detect",
]
