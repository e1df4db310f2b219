"""The real :class:`~jobs.repair.tier0.autofix.CommandBench`: one shell command in a fresh private
copy of a tree, through the :class:`~runners.base.Runner` port, and the files it changed read back.

Used by tier-0 autofix: the fix command of a formatter/linter (``ruff format``) runs on the
repository's own environment (the runner's toolchains, the ``.arcs.yml`` ``setup`` step), with no
network for the command itself, and its edits become a candidate patch. The user's tree is only read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from jobs.repair.edits import AppliedEdits, FileChange
from jobs.repair.tier0.autofix import CommandRun
from jobs.sandbox_workbench import write_change
from runners import wsfs
from runners.base import Runner
from runners.commands import BASE_ENV
from runners.execute import SKIP_DIRS
from runners.workspace import ephemeral_workspace

_OUTPUT_TAIL = 4000
_MODE_EXEC = 0o100755
_MODE_FILE = 0o100644

Stamp = tuple[int, int, int]


class SandboxCommandBench:
    """Runs commands on private copies of ``repo`` (see the module docstring)."""

    def __init__(
        self,
        repo: Path,
        runner: Runner,
        *,
        workspace_root: Path | None = None,
        memory_mb: int = 2048,
        env: Mapping[str, str] | None = None,
        setup: str | None = None,
        setup_network: bool = True,
        count: Callable[[int], None] | None = None,
    ) -> None:
        self.repo = Path(repo).resolve()
        self.runner = runner
        self.workspace_root = workspace_root
        self.memory_mb = memory_mb
        self.env = {**BASE_ENV, **(env or {})}
        self.setup = setup
        self.setup_network = setup_network
        self.runs = 0
        self.count = count
        """Charges each run to the repair's meter before it starts (None: counted here only)."""

    def run_command(
        self, command: str, *, change: AppliedEdits | None = None, timeout_s: float
    ) -> CommandRun:
        """Run ``command`` on base + ``change`` in a fresh copy; never raises for command trouble."""
        self.runs += 1
        if self.count is not None:
            self.count(1)
        with ephemeral_workspace(self.repo, root=self.workspace_root) as ws:
            if change is not None:
                write_change(ws, change)
            if self.setup:
                prepared = self.runner.run(
                    ws,
                    self.setup,
                    timeout_s=timeout_s,
                    memory_mb=self.memory_mb,
                    network=self.setup_network,
                    env=self.env,
                )
                if not prepared.ok:
                    out = f"setup failed (exit {prepared.exit_code})\n{prepared.stdout}\n{prepared.stderr}"
                    return CommandRun(
                        command, prepared.exit_code or 1, out[-_OUTPUT_TAIL:], prepared.duration_s
                    )
            before = _stamps(ws)
            ex = self.runner.run(ws, command, timeout_s=timeout_s, memory_mb=self.memory_mb, env=self.env)
            # Files the command created are left out (caches, reports): a fix mode rewrites files.
            touched = {rel for rel, st in _stamps(ws).items() if rel in before and before[rel] != st}
            touched |= {rel for rel in before if not (ws / rel).exists()}
            touched |= set(change.paths if change is not None else ())
            result = self._changes(ws, touched)
        output = (ex.stdout + ("\n" if ex.stdout and ex.stderr else "") + ex.stderr)[-_OUTPUT_TAIL:]
        return CommandRun(
            command=command,
            exit_code=ex.exit_code,
            output=output,
            duration_s=ex.duration_s,
            timed_out=ex.killed_by == "timeout",
            change=result,
        )

    def _changes(self, ws: Path, paths: set[str]) -> AppliedEdits:
        """The files of ``paths`` whose text in ``ws`` differs from the base tree (text files only)."""
        out: list[FileChange] = []
        for rel in sorted(paths):
            base = self.repo / rel
            old = wsfs.text_or_none(self.repo, rel)
            new = wsfs.text_or_none(ws, rel)
            if old == new or (old is None and base.exists()) or (new is None and (ws / rel).exists()):
                continue  # unchanged, or binary on one side: not something a formatter patch carries
            mode = _MODE_EXEC if base.exists() and base.stat().st_mode & 0o111 else _MODE_FILE
            out.append(FileChange(rel, old, new, mode))
        return AppliedEdits(tuple(out))


def _stamps(root: Path) -> dict[str, Stamp]:
    """Path -> (size, mtime_ns, mode) of every regular file under ``root`` outside the skipped folders."""
    out: dict[str, Stamp] = {}
    base = str(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        rel = os.path.relpath(dirpath, base)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in filenames:
            try:
                st = os.lstat(f"{dirpath}/{name}")
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out[prefix + name] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


__all__ = ["SandboxCommandBench"]
