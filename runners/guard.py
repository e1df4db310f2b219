"""The host-wide limits of sandboxed runs (:class:`runners.limits.SandboxLimits`), enforced per run.

:class:`LimitEnforcer` finds, once, what the host offers for each limit:

============  ===================================================  ==========================================
limit         mechanism                                            fallback
============  ===================================================  ==========================================
CPU           cgroup ``cpu.max`` (v2) / ``cpu.cfs_quota_us`` (v1)  none (the host's scheduler alone)
memory        cgroup ``memory.max`` + no swap / ``limit_in_bytes``  ``RLIMIT_DATA`` per process
processes     cgroup ``pids.max`` per run, and on all runs         ``RLIMIT_NPROC`` per sandbox uid
disk          :class:`runners.quota.DiskWatch` + tmpfs sizes       (always available)
============  ===================================================  ==========================================

:class:`RunGuard` is one run: it puts the command into its cgroup before bubblewrap starts, stops
it (``killed_by`` ``memory``, ``processes`` or ``disk``) as soon as the kernel reports an OOM kill
or a refused fork, or the disk watcher the quota, and names the limit and its value in
:attr:`runners.limits.Supervised.limit`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import structlog

from runners.base import KilledBy
from runners.cgroups import Cgroups, CgroupSpec, Controller, RunCgroup, detect
from runners.limits import SandboxLimits, Supervised, looks_out_of_space
from runners.quota import DiskWatch

log = structlog.get_logger(__name__)

_WATCH_EVERY_S = 0.05
_NPROC_SLACK = 16
"""The per-uid rlimit stays as a backstop, a little above the cgroup's count (which bites first)."""


class LimitEnforcer:
    """What this host offers for each limit, found once (thread-safe); makes a :class:`RunGuard` per run."""

    def __init__(self, limits: SandboxLimits, *, find_cgroups: Callable[..., Cgroups] | None = None) -> None:
        """Nothing is probed until :attr:`cgroups` is first read (``find_cgroups``: default
        :func:`runners.cgroups.detect`)."""
        self.limits = limits
        self._find = find_cgroups
        self._cgroups: Cgroups | None = None
        self._lock = threading.Lock()

    @property
    def cgroups(self) -> Cgroups:
        """The cgroups runs get (probed, and stale run cgroups swept, on first access)."""
        with self._lock:
            if self._cgroups is None:
                found = self.find_cgroups()
                found.sweep_stale()
                if found.reason:
                    log.warning("sandbox.cgroups_missing", reason=found.reason, fallback="rlimits")
                self._cgroups = found
            return self._cgroups

    def find_cgroups(self, *, dry_run: bool = False) -> Cgroups:
        """Probe the host's cgroups for these limits (``dry_run``: change nothing, as ``arcs doctor``)."""
        want: list[Controller] = ["pids"]
        if self.limits.cpus is not None:
            want.append("cpu")
        if self.limits.memory_mb is not None:
            want.append("memory")
        return (self._find or detect)(
            want=want,
            parent=self.limits.cgroup_parent,
            group=self.limits.cgroup_group,
            total_processes=self.limits.total_processes,
            dry_run=dry_run,
        )

    def rlimit_processes(self) -> int:
        """``RLIMIT_NPROC`` for the sandboxed user: the limit itself without a pids cgroup."""
        slack = _NPROC_SLACK if self.cgroups.has("pids") else 0
        return self.limits.processes + slack

    def mechanisms(self, cgroups: Cgroups | None = None) -> dict[str, str]:
        """For each limit, the mechanism in force and its value (``arcs doctor``).

        ``cgroups``: what :func:`runners.cgroups.detect` found (default: :attr:`cgroups`).
        """
        lim, cg = self.limits, cgroups or self.cgroups

        def via(controller: Controller, what: str, fallback: str) -> str:
            version = cg.version_of(controller)
            return f"{what} (cgroup v{version})" if version else fallback

        cpu = "off" if lim.cpus is None else via("cpu", f"{lim.cpus:g} cores", "none (no cpu cgroup)")
        memory = (
            "per process only (RLIMIT_DATA)"
            if lim.memory_mb is None
            else via(
                "memory", f"{lim.memory_mb} MiB, no swap", "per process only (RLIMIT_DATA; no memory cgroup)"
            )
        )
        total = f", {lim.total_processes} for all sandboxes" if lim.total_processes is not None else ""
        processes = via(
            "pids",
            f"{lim.processes} per run{total}",
            f"{lim.processes} per sandbox uid (RLIMIT_NPROC; no pids cgroup)",
        )
        disk = "off" if lim.disk_mb is None else f"{lim.disk_mb} MiB per run (workspace watcher, tmpfs sizes)"
        return {"cpu": cpu, "memory": memory, "processes": processes, "disk": disk}

    def start(
        self, workspace: Path, temp_mounts: Mapping[str, int], extra_roots: Sequence[Path] = ()
    ) -> RunGuard:
        """Set up one run: its cgroup (raises :class:`runners.cgroups.CgroupError`) and disk watcher.

        ``temp_mounts`` maps the sandbox's size-limited tmpfs mounts to their size in MiB;
        ``extra_roots`` are host folders the run may write besides the workspace (counted too).
        """
        cg = self.cgroups
        cgroup = None
        if cg.hierarchies:
            spec = CgroupSpec(
                cpus=self.limits.cpus if cg.has("cpu") else None,
                memory_mb=self.limits.memory_mb if cg.has("memory") else None,
                processes=self.limits.processes if cg.has("pids") else None,
            )
            cgroup = cg.create(spec)
        disk = None
        if self.limits.disk_mb is not None:
            try:
                sizes = {mount: mib << 20 for mount, mib in temp_mounts.items()}
                disk = DiskWatch(
                    workspace, self.limits.disk_mb << 20, temp_mounts=sizes, extra_roots=extra_roots
                )
            except BaseException:
                if cgroup is not None:
                    cgroup.remove()
                raise
        return RunGuard(self.limits, cgroup, disk, dict(temp_mounts))


class RunGuard:
    """One run's limits: enter, watch, verdict, clean up (see the module docstring)."""

    def __init__(
        self,
        limits: SandboxLimits,
        cgroup: RunCgroup | None,
        disk: DiskWatch | None,
        temp_mounts: Mapping[str, int],
    ) -> None:
        """Use :meth:`LimitEnforcer.start`."""
        self.limits = limits
        self.cgroup = cgroup
        self.disk = disk
        self.temp_mounts = dict(temp_mounts)
        self.sandbox_pid: Callable[[], int | None] = lambda: None
        """A process in the sandbox's mount namespace (set by the runner once bwrap reports it)."""
        self.tree: Callable[[], Iterable[int]] = list
        """The run's processes when there is no cgroup to list them."""
        self._next = 0.0

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` entering the run's cgroup first (unchanged without one)."""
        return self.cgroup.enter_argv(argv) if self.cgroup is not None else list(argv)

    def _pids(self) -> Iterable[int]:
        return self.cgroup.pids() if self.cgroup is not None else self.tree()

    def watch(self) -> KilledBy | None:
        """:func:`runners.limits.supervise`'s ``watch``: the limit the run just reached, if any."""
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + _WATCH_EVERY_S
        verdict: KilledBy | None = None
        if self.cgroup is not None and self.cgroup.oom_kills():
            verdict = "memory"
        elif self.cgroup is not None and self.cgroup.fork_refusals():
            verdict = "processes"
        elif self.disk is not None and self.disk.poll(self.sandbox_pid(), self._pids):
            verdict = "disk"
        return verdict

    def finish(self, done: Supervised) -> Supervised:
        """``done`` with what the kernel saw added: the verdict if a limit ended the run, its line, usage."""
        usage = dict(self.cgroup.usage()) if self.cgroup is not None else {}
        over_quota = self.disk.final() if self.disk is not None else False
        if self.disk is not None:
            peak = self.disk.peak
            usage.update(
                disk_peak_bytes=peak.total,
                disk_workspace_growth_bytes=peak.workspace_growth,
                disk_temp_bytes=peak.temp,
                disk_walks=self.disk.walks,
            )
        killed_by = done.killed_by
        failed = done.exit_code != 0
        if killed_by in (None, "memory") and usage.get("oom_kills", 0) > 0:
            killed_by = "memory"  # the kernel killed a process at the limit before our watch saw it
        elif killed_by is None and failed and usage.get("pids_refused", 0) > 0:
            killed_by = "processes"
        elif killed_by is None and (
            over_quota
            or (failed and self.disk is not None and self.disk.full_mount)
            or (
                failed
                and self.disk is not None
                and looks_out_of_space(done.exit_code, done.stderr_tail.encode())
            )
        ):
            killed_by = "disk"  # ended on its own, between two polls, past the quota or on ENOSPC
        line = self._line(killed_by, usage) or done.limit
        return replace(done, killed_by=killed_by, limit=line, usage=usage)

    def _line(self, killed_by: KilledBy | None, usage: Mapping[str, int]) -> str:
        lim = self.limits
        if killed_by == "memory" and usage.get("oom_kills", 0) > 0:
            kills = usage["oom_kills"]
            return (
                f"stopped: the sandbox reached its {lim.memory_mb} MiB memory limit "
                f"(the kernel killed {kills} process{'es' if kills > 1 else ''})"
            )
        if killed_by == "processes":
            peak = usage.get("pids_peak", lim.processes)
            if lim.total_processes is not None and peak < lim.processes:
                # Refused below the run's own limit: the cap on all sandboxes together was reached.
                return f"stopped: the sandboxes together reached their {lim.total_processes}-process limit"
            return f"stopped: the sandbox reached its {lim.processes}-process limit"
        if killed_by == "disk" and self.disk is not None:
            full = self.disk.full_mount
            if full:
                size = self.temp_mounts.get(full, 0)
                return (
                    f"stopped: the sandbox's {full} is full ({size} MiB; the disk quota is {lim.disk_mb} MiB)"
                )
            peak = usage.get("disk_peak_bytes", 0)
            if peak >= (lim.disk_mb or 0) << 20:
                return (
                    f"stopped: the workspace and its temp space reached the {lim.disk_mb} MiB disk quota "
                    f"({peak >> 20} MiB written)"
                )
            return f"stopped: a write failed with 'no space left on device' (the disk quota is {lim.disk_mb} MiB)"
        return ""

    def close(self) -> None:
        """Remove the run's cgroup, killing anything left in it."""
        if self.cgroup is not None:
            self.cgroup.remove()


__all__ = ["LimitEnforcer", "RunGuard"]
