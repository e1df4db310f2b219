"""The ``Runner`` port: run one command in an isolated workspace and report what happened."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

KilledBy = Literal["timeout", "memory", "output", "signal", "disk", "processes"]
"""Why the sandbox stopped a command: its wall time, memory (the kernel's OOM killer in the run's
cgroup, or an allocation failure at the per-process limit), captured output, a signal, the disk
quota (workspace and temp space), or the process limit (a fork refused)."""

PRIVATE_ENV = "ARCS_PRIVATE"
"""The variable that tells a command where it sees the run's private folder (``Runner.run(private=)``)."""
PRIVATE_MOUNT = "/run/arcs"
"""Where sandboxes and containers mount the private folder (read-write)."""


@dataclass(frozen=True, slots=True)
class Execution:
    """The outcome of one sandboxed command."""

    command: str
    exit_code: int
    """Process exit status; negative for 'killed by signal N' (``-9``)."""
    stdout: str
    stderr: str
    duration_s: float
    killed_by: KilledBy | None = None
    """Why the sandbox ended the process, if it did."""
    truncated: bool = False
    """True when stdout or stderr hit the output cap (a marker line is appended to the text)."""
    artifacts: Mapping[str, str] = field(default_factory=dict)
    """Small files the command produced that the caller asked for (e.g. JUnit XML), by relative path."""
    hang: str = ""
    """On a timeout: the processes that were still running at the deadline (one line), else ''."""
    limit: str = ""
    """When a limit stopped the command: one line naming it and its value, e.g. ``stopped: the
    workspace and its temp space reached the 2048 MiB disk quota (2051 MiB written)``; else ''."""
    usage: Mapping[str, int] = field(default_factory=dict)
    """What the kernel counted for the run when the runner measures it (``pids_peak``,
    ``memory_peak_bytes``, ``oom_kills``, ``cpu_throttled``, ``cpu_throttled_us``,
    ``disk_peak_bytes``...); empty otherwise."""

    @property
    def ok(self) -> bool:
        """Exited 0 and was not killed."""
        return self.exit_code == 0 and self.killed_by is None


@runtime_checkable
class Runner(Protocol):
    """Runs untrusted commands (a repository's own tests) with no secrets and bounded resources."""

    name: str

    def run(
        self,
        workspace: Path,
        command: str,
        *,
        timeout_s: float = 600.0,
        memory_mb: int = 2048,
        network: bool = False,
        env: Mapping[str, str] | None = None,
        collect: tuple[str, ...] = (),
        private: Path | None = None,
    ) -> Execution:
        """Run ``command`` (a shell string) with ``workspace`` as its read-write working directory.

        ``env`` is the complete extra environment (nothing is inherited from the host); ``collect``
        names workspace-relative files to read back into :attr:`Execution.artifacts` after exit.
        ``private`` (:func:`runners.workspace.private_folder`, outside the workspace) is made
        writable to the command at the path in ``$ARCS_PRIVATE`` (:data:`PRIVATE_ENV`).
        """
        ...
