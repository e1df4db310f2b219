"""Resource limits and process supervision shared by the runners.

Two halves:

* :func:`limited_shell_argv` turns a command into ``sh -c 'ulimit ...; exec sh -c "$1"' CMD`` so the
  limits are applied *inside* the sandbox by the sandboxed user itself. Doing it there (rather than in
  a ``preexec_fn``) keeps ``subprocess`` fork-safe in a threaded host, and it makes ``RLIMIT_NPROC``
  count per sandbox: in a fresh user namespace the kernel tracks processes per (namespace, uid).
* :func:`supervise` starts the process in its own session, drains stdout/stderr incrementally with a
  cap per stream, and SIGKILLs the whole process group on wall-time or runaway output, or when a
  ``watch`` callback (the per-run cgroup and disk quota of :mod:`runners.guard`) says so. At the
  wall-time deadline it first records the processes still running and sends SIGABRT to the Python
  ones among them: with ``PYTHONFAULTHANDLER=1`` (set for every test run) each prints the stack of
  all its threads, which becomes the frames of the ``timeout`` failure; ``dump_grace_s`` later the
  group is killed as before.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import IO

from runners.base import KilledBy
from runners.errors import UsageError

DEFAULT_OUTPUT_CAP = 1 << 20
"""Bytes kept per stream (stdout, stderr); the rest is counted and replaced by a marker."""

DEFAULT_OUTPUT_KILL = 64 << 20
"""Total bytes (both streams) after which the command is killed with ``killed_by="output"``."""

_READ_CHUNK = 1 << 16
_POLL_S = 0.1
# After the main process exits, grandchildren may still hold the pipes; wait this long for EOF.
_DRAIN_GRACE_S = 1.0

_NO_SPACE = re.compile(rb"No space left on device|\bENOSPC\b|\bEDQUOT\b|Disk quota exceeded")

_OOM_PATTERN = re.compile(
    rb"\bMemoryError\b|Cannot allocate memory|std::bad_alloc|out of memory|OutOfMemoryError"
    rb"|JavaScript heap out of memory|memory allocation of \d+ bytes failed"
)


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """The host-wide limits of every sandboxed run (``ARCS_SANDBOX_*``), as plain values.

    Each limit is enforced by the best mechanism the host offers (:mod:`runners.guard`); None or 0
    turns a limit off.
    """

    disk_mb: int | None = 4096
    """How much one run may grow its workspace and temp space together (MiB)."""
    cpus: float | None = 2.0
    """CPU time of one run's whole process tree, in cores (cgroup ``cpu.max``)."""
    memory_mb: int | None = 4096
    """Memory of one run's whole process tree, page cache and tmpfs included (cgroup ``memory.max``)."""
    processes: int = 512
    """Processes and threads of one run (cgroup ``pids.max``, else ``RLIMIT_NPROC``)."""
    total_processes: int | None = 4096
    """Processes of all the sandboxes of the worker processes in one cgroup together."""
    cgroup_parent: Path | None = None
    """The cgroup folder to create run cgroups under (None: this process's own cgroup)."""
    cgroup_group: str = "arcs-sandboxes"
    """Name of the folder under the parent that holds every run's cgroup (and the total cap)."""

    def __post_init__(self) -> None:
        if self.disk_mb is not None and self.disk_mb < 1:
            raise UsageError(f"the disk quota must be at least 1 MiB, not {self.disk_mb}")
        if self.cpus is not None and not 0.01 <= self.cpus <= 4096:
            raise UsageError(f"the CPU limit must be between 0.01 and 4096 cores, not {self.cpus}")
        if self.memory_mb is not None and self.memory_mb < 16:
            raise UsageError(f"the sandbox memory limit must be at least 16 MiB, not {self.memory_mb}")
        if self.processes < 2:
            raise UsageError(f"the process limit must be at least 2, not {self.processes}")
        if self.total_processes is not None and self.total_processes < self.processes:
            raise UsageError(
                f"the total process limit ({self.total_processes}) is below one run's ({self.processes})"
            )
        if not self.cgroup_group or "/" in self.cgroup_group or self.cgroup_group in (".", ".."):
            raise UsageError(f"the cgroup group must be one folder name, not {self.cgroup_group!r}")

    @classmethod
    def off(cls, *, processes: int = 512) -> SandboxLimits:
        """Only the rlimits (the sandbox before per-run cgroups and quotas)."""
        return cls(disk_mb=None, cpus=None, memory_mb=None, processes=processes, total_processes=None)


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-run resource caps. Sizes are in MiB unless the name says bytes."""

    timeout_s: float
    memory_mb: int
    """Per-process data segment (``RLIMIT_DATA``): heap and private writable mappings."""
    max_processes: int | None = 512
    """Processes and threads per sandbox (``RLIMIT_NPROC``); None leaves the limit alone."""
    max_file_mb: int = 1024
    """Largest file a process may write (``RLIMIT_FSIZE``)."""
    output_cap_bytes: int = DEFAULT_OUTPUT_CAP
    output_kill_bytes: int = DEFAULT_OUTPUT_KILL
    dump_grace_s: float = 2.0
    """At the deadline, how long Python processes get to print their stacks before the kill."""

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise UsageError(f"the time limit must be positive, not {self.timeout_s}")
        if self.memory_mb < 16:
            raise UsageError(f"the memory limit must be at least 16 MiB, not {self.memory_mb}")
        if self.max_processes is not None and self.max_processes < 2:
            raise UsageError(f"the process limit must be at least 2, not {self.max_processes}")
        if self.max_file_mb < 1:
            raise UsageError(f"the file size limit must be at least 1 MiB, not {self.max_file_mb}")
        if self.output_cap_bytes < 0 or self.output_kill_bytes < self.output_cap_bytes:
            raise UsageError("output limits need 0 <= output_cap_bytes <= output_kill_bytes")


def limits_prologue(limits: Limits) -> str:
    """POSIX shell lines that lower the hard and soft rlimits of the shell and everything it runs.

    ``ulimit -d`` is in KiB and ``-f`` in 512-byte blocks in every POSIX ``sh`` (dash, bash in POSIX
    mode, busybox). The process count flag differs (``-u`` in bash and busybox, ``-p`` in dash).
    ``RLIMIT_DATA`` rather than ``RLIMIT_AS``: JIT runtimes (V8, the JVM) reserve huge address ranges
    they never touch, and only a data limit lets them start.
    """
    data_kib = limits.memory_mb * 1024
    fsize_blocks = limits.max_file_mb * 2048
    steps = ["ulimit -c 0", f"ulimit -d {data_kib}", f"ulimit -f {fsize_blocks}"]
    if limits.max_processes is not None:
        n = limits.max_processes
        steps.append(f"{{ ulimit -u {n} || ulimit -p {n}; }}")
    return (
        "{ " + " && ".join(steps) + "; } 2>/dev/null "
        '|| { echo "arcs-sandbox: could not apply resource limits" >&2; exit 125; }'
    )


def limited_shell_argv(command: str, limits: Limits, *, shell: str = "/bin/sh") -> list[str]:
    """``argv`` that applies ``limits`` and then runs ``command`` with ``shell -c`` (unchanged)."""
    script = f'{limits_prologue(limits)}\nexec {shell} -c "$1"'
    return [shell, "-c", script, "arcs-sandbox", command]


def signal_exit_code(code: int) -> int:
    """Map the shell convention ``128 + N`` (what bwrap and ``sh`` report) to ``-N``."""
    if 128 < code <= 128 + 64:
        return -(code - 128)
    return code


def looks_out_of_memory(exit_code: int, stderr_tail: bytes) -> bool:
    """Best-effort: a failed run whose *last* stderr lines report an allocation failure hit the limit.

    Only the end of stderr counts, where an uncaught ``MemoryError`` or a runtime's fatal
    out-of-memory message lands; a test runner that merely reports a failing test about memory (on
    stdout, followed by its summary) is a test failure, not a kill.
    """
    if exit_code == 0:
        return False
    last = [line for line in stderr_tail.splitlines() if line.strip()][-3:]
    return any(_OOM_PATTERN.search(line) for line in last)


def looks_out_of_space(exit_code: int, stderr_tail: bytes) -> bool:
    """Best-effort, like :func:`looks_out_of_memory`: the last stderr lines report ENOSPC."""
    if exit_code == 0:
        return False
    last = [line for line in stderr_tail.splitlines() if line.strip()][-3:]
    return any(_NO_SPACE.search(line) for line in last)


class _Capture:
    """Keeps the first ``cap`` bytes of a stream and counts the rest."""

    __slots__ = ("cap", "chunks", "kept", "tail", "total")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0
        self.tail = b""

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap - self.kept
        if room > 0:
            piece = data[:room]
            self.chunks.append(piece)
            self.kept += len(piece)
        # The last few KiB, kept even past the cap, feed the out-of-memory diagnosis.
        self.tail = (self.tail + data)[-4096:]

    @property
    def truncated(self) -> bool:
        return self.total > self.kept

    def text(self) -> str:
        out = b"".join(self.chunks).decode("utf-8", errors="replace")
        if self.truncated:
            out += f"\n[... truncated {self.total - self.kept} bytes ...]\n"
        return out


@dataclass(frozen=True, slots=True)
class Supervised:
    """What :func:`supervise` observed."""

    exit_code: int
    stdout: str
    stderr: str
    duration_s: float
    killed_by: KilledBy | None
    truncated: bool
    hang: str = ""
    """On a timeout: the processes still running at the deadline (one line)."""
    stderr_tail: str = ""
    """The last few KiB of stderr (kept even past the output cap)."""
    limit: str = ""
    """One line naming the limit that stopped the run and its value ('' when none did)."""
    usage: Mapping[str, int] = field(default_factory=dict)
    """What the kernel counted for the run (cgroup peaks, throttling, disk use), when measured."""


def stop_line(killed_by: KilledBy | None, limits: Limits) -> str:
    """The user-visible line for a stop :func:`supervise` itself decided (time, output, rlimits)."""
    if killed_by == "timeout":
        return f"stopped: the command ran past its {limits.timeout_s:g} s time limit"
    if killed_by == "output":
        return f"stopped: the command wrote more than {limits.output_kill_bytes >> 20} MiB of output"
    if killed_by == "memory":
        return f"stopped: a process ran out of memory (the limit is {limits.memory_mb} MiB per process)"
    return ""


_MAX_TREE_CHARS = 600


def process_tree(root: int) -> list[tuple[int, list[str]]]:
    """``(pid, argv)`` of the descendants of ``root``, parents first (Linux ``/proc``; [] elsewhere)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [p.name for p in Path("/proc").iterdir()]
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", errors="replace")
            # The command name may hold spaces and parentheses: fields resume after the last ')'.
            ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out: list[tuple[int, list[str]]] = []
    queue = sorted(children.get(root, []))
    while queue:
        pid = queue.pop(0)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode("utf-8", errors="replace") for a in fh.read().split(b"\0") if a]
        except OSError:
            continue
        out.append((pid, argv))
        queue.extend(sorted(children.get(pid, [])))
    return out


def _is_python(argv: Sequence[str]) -> bool:
    return bool(argv) and "python" in PurePath(argv[0]).name


def interrupt_hung(proc: subprocess.Popen[bytes]) -> tuple[str, bool]:
    """At the deadline: one line naming the processes still running under ``proc`` (the sandbox's
    own ``bwrap``/``setpriv`` plumbing and the limits shell left out), and whether a Python
    process among them was sent SIGABRT (so that faulthandler prints its threads' stacks)."""
    shown: list[str] = []
    signalled = False
    for pid, argv in process_tree(proc.pid):
        name = PurePath(argv[0]).name if argv else ""
        if name in ("bwrap", "setpriv") or "arcs-sandbox" in argv:
            continue
        shown.append(" ".join(argv)[:160])
        if _is_python(argv):
            try:
                os.kill(pid, signal.SIGABRT)
                signalled = True
            except (ProcessLookupError, PermissionError):
                pass
    line = "; ".join(shown)
    return (line[: _MAX_TREE_CHARS - 1] + "…" if len(line) > _MAX_TREE_CHARS else line), signalled


def kill_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group led by ``proc`` (started with ``start_new_session=True``)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


def supervise(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    limits: Limits,
    pass_fds: Sequence[int] = (),
    kill: Callable[[subprocess.Popen[bytes]], None] = kill_process_group,
    reap_group: bool = False,
    watch: Callable[[], KilledBy | None] | None = None,
) -> Supervised:
    """Run ``argv`` to completion under ``limits`` and capture its output.

    The process leads a new session, so ``kill`` (default: SIGKILL to the group) reaches its
    descendants. ``reap_group`` also kills the group once the main process has exited, for runners
    without a pid namespace that would otherwise leave background jobs behind. ``watch`` is called
    about every 0.1 s while the command runs; when it names a limit, the command is killed with
    that ``killed_by``.
    """
    out = _Capture(limits.output_cap_bytes)
    err = _Capture(limits.output_cap_bytes)
    killed_by: KilledBy | None = None
    start = time.monotonic()
    deadline = start + limits.timeout_s
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        pass_fds=tuple(pass_fds),
        start_new_session=True,
        close_fds=True,
    )
    streams: dict[int, tuple[IO[bytes], _Capture]] = {}
    assert proc.stdout is not None and proc.stderr is not None
    streams[proc.stdout.fileno()] = (proc.stdout, out)
    streams[proc.stderr.fileno()] = (proc.stderr, err)
    exited_at: float | None = None
    stop_at: float | None = None
    kill_at: float | None = None
    """Set at the deadline while Python processes print their stacks; the kill follows."""
    killed = False
    watched = False
    hang = ""
    sel = selectors.DefaultSelector()
    try:
        for fd, (stream, _) in streams.items():
            os.set_blocking(fd, False)
            sel.register(stream, selectors.EVENT_READ)
        open_fds = set(streams)
        while open_fds:
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
                if reap_group:
                    kill_process_group(proc)
            if killed_by is None and now >= deadline:
                killed_by = "timeout"
                hang, signalled = interrupt_hung(proc) if exited_at is None else ("", False)
                if signalled and limits.dump_grace_s > 0:
                    kill_at = now + limits.dump_grace_s
                else:
                    kill(proc)
                    killed = True
            if killed_by is None and watch is not None and exited_at is None:
                verdict = watch()
                if verdict is not None:
                    killed_by, watched = verdict, True
                    kill(proc)
                    killed = True
            if kill_at is not None and (now >= kill_at or exited_at is not None):
                kill_at = None
                kill(proc)
                killed = True
            if stop_at is None and (exited_at is not None or killed):
                stop_at = now + _DRAIN_GRACE_S
            if stop_at is not None and now >= stop_at:
                break
            wait = _POLL_S
            if killed_by is None:
                wait = min(wait, deadline - now)
            if kill_at is not None:
                wait = min(wait, kill_at - now)
            if stop_at is not None:
                wait = min(wait, stop_at - now)
            for key, _ in sel.select(timeout=max(wait, 0.0)):
                try:
                    data = os.read(key.fd, _READ_CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(key.fileobj)
                    open_fds.discard(key.fd)
                    continue
                streams[key.fd][1].feed(data)
                if killed_by is None and out.total + err.total > limits.output_kill_bytes:
                    killed_by = "output"
                    kill(proc)
                    killed = True
        if killed_by is None:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                killed_by = "timeout"
                hang, _ = interrupt_hung(proc)
                kill(proc)
        elif not killed:
            kill(proc)
        if reap_group:
            kill_process_group(proc)
        proc.wait()
        duration = (exited_at or time.monotonic()) - start
    finally:
        sel.close()
        for stream, _ in streams.values():
            stream.close()
        if proc.returncode is None:
            kill(proc)
            proc.wait()
    code = proc.returncode
    forced = watched or killed_by in ("timeout", "output")
    exit_code = -signal.SIGKILL if forced else signal_exit_code(code)
    if killed_by is None and looks_out_of_memory(exit_code, err.tail):
        killed_by = "memory"
    return Supervised(
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_s=duration,
        killed_by=killed_by,
        truncated=out.truncated or err.truncated,
        hang=hang,
        stderr_tail=err.tail.decode("utf-8", errors="replace"),
        limit=stop_line(killed_by, limits) if not watched else "",
    )
