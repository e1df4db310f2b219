"""The ``Runner`` port: run one command in an isolated workspace and report what happened."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

KilledBy = Literal["timeout", "memory", "output", "signal"]

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
