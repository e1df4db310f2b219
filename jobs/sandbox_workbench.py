"""The real :class:`~jobs.repair.workbench.Workbench`: private copies of a local tree, the sandboxed
runner, parsed per-test results.

- :meth:`SandboxWorkbench.preview` applies edits (atomically, :func:`jobs.repair.edits.apply_edits`)
  to one long-lived scratch copy of the tree and restores the touched files from the original
  right after, so previewing costs no copy and nothing of a candidate survives into the next.
- :meth:`SandboxWorkbench.run_tests` makes a fresh ephemeral copy per run, writes the change into
  it, runs the *diagnosis* command there (the test command without its fail-fast flags,
  :func:`runners.failfast.without_fail_fast`; narrowed to the selected tests when the framework
  can) and parses the results (:func:`runners.execute.run_in_workspace`). One call, one execution.
- :meth:`SandboxWorkbench.verify` runs the *exact* command as given (fail-fast flags included) the
  same way: the final verification behind a ``fixed`` verdict (never probed).
- Hangs: every diagnosis run is probed (:mod:`runners.hang`). The first whole-suite run of the base
  tree (the baseline) also sets per-test limits for every later run, measured once
  (:func:`runners.hang.limits_of`): a candidate that still hangs where the baseline hung is stopped
  after about as long as the slowest test that finished, not after the ratio rule's 10 s or more.
- :meth:`SandboxWorkbench.spectrum` (the :class:`~jobs.repair.spectrum.Profiler` port) runs the
  base tree's diagnosis command (or only the failing tests' files) once more with line tracing
  (:mod:`runners.spectrum`), in a fresh copy, the baseline's hung test deselected.
- :meth:`SandboxWorkbench.probe` (the :class:`~jobs.repair.behaviour.Prober` port) runs the
  behaviour probe's script with the test command's interpreter and environment, in a fresh copy.

The user's work tree is only ever read. Every write into a copy and every read back goes through
:mod:`runners.wsfs` (no link followed); the probes live in each run's private folder
(:func:`runners.workspace.private_folder`), outside the copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

from jobs.repair.behaviour import OUTPUT as PROBE_OUTPUT
from jobs.repair.behaviour import OUTPUT_CAP as PROBE_OUTPUT_CAP
from jobs.repair.behaviour import SCRIPT as PROBE_SCRIPT
from jobs.repair.behaviour import ProbeRun
from jobs.repair.edits import MAX_FILE_BYTES, AppliedEdits, apply_edits
from jobs.repair.model import Edit, Failure, Frame
from jobs.repair.spectrum import Spectrum, SpectrumScope
from jobs.repair.workbench import TestOutcome
from runners import wsfs
from runners.base import PRIVATE_ENV, Runner
from runners.commands import ResolvedCommand
from runners.execute import run_in_workspace
from runners.failfast import without_fail_fast
from runners.hang import HangProbe, limits_of, write_limits
from runners.results import TestFailure, TestRun
from runners.spectrum import LineSpectrum, deselecting, read_spectrum, trace_command
from runners.spectrum import install as install_spectrum
from runners.workspace import ephemeral_workspace, private_folder, shareable

MAX_FRAMES = 12
_RESTORE_LIMIT = 4 * MAX_FILE_BYTES
"""The largest file the scratch copy restores (an edited file is at most MAX_FILE_BYTES before)."""
TRACE_SLOWDOWN = 5.0
"""How much longer a test may take under line tracing (measured: 1.1-4.2x): hang limits grow by it."""


class SystemClock:
    """The :class:`~jobs.repair.ports.Clock` of a real run: ``time.monotonic``."""

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin."""
        return time.monotonic()


class DirectorySource:
    """A :class:`~jobs.repair.ports.SourceView` over a local tree (indexable files only), cached."""

    def __init__(self, root: Path, files: Sequence[str]) -> None:
        self.root = Path(root)
        self._files = sorted(files)
        self._texts: dict[str, str | None] = {}

    @classmethod
    def of(
        cls, root: Path, *, exclude: Sequence[str] = (), max_file_bytes: int = 1_000_000
    ) -> DirectorySource:
        """The indexable files of ``root`` (git's view when it is a work tree)."""
        from indexing.files import discover_files

        return cls(root, discover_files(root, exclude=exclude, max_file_bytes=max_file_bytes))

    def read(self, path: str) -> str | None:
        """The file's text, or None when missing, unreadable or binary."""
        if path not in self._texts:
            from indexing.files import read_text

            self._texts[path] = read_text(self.root, path)
        return self._texts[path]

    def files(self) -> Sequence[str]:
        """The indexable files, sorted."""
        return self._files

    def digest(self) -> str:
        """sha256 over (path, content) of every file: identifies the base tree for replays."""
        h = hashlib.sha256()
        for path in self._files:
            text = self.read(path)
            h.update(path.encode("utf-8", "surrogateescape") + b"\0")
            h.update((text if text is not None else "\0binary").encode("utf-8", "surrogateescape") + b"\0")
        return h.hexdigest()


def to_failure(f: TestFailure) -> Failure:
    """A runner :class:`TestFailure` as the repair core's :class:`Failure` (innermost frame last)."""
    frames = tuple(Frame(fr.file, fr.line, fr.function or "") for fr in f.frames)[-MAX_FRAMES:]
    return Failure(
        test_id=f.id,
        type=f.type or "",
        message=f.message,
        path=f.file or "",
        line=f.line or 0,
        frames=frames,
    )


def to_outcome(run: TestRun, *, selected: bool) -> TestOutcome:
    """A parsed :class:`TestRun` reduced to a :class:`TestOutcome`."""
    return TestOutcome(
        passed=tuple(run.passed_ids),
        failed=tuple(run.failed_ids),
        errors=tuple(dict.fromkeys(e.id for e in run.errors)),
        failures=tuple(to_failure(f) for f in (*run.failures, *run.errors)),
        exit_code=run.exit_code,
        duration_s=run.duration_s,
        timed_out=run.killed_by == "timeout",
        skipped=tuple(r.id for r in run.results if r.outcome == "skipped"),
        selected=selected,
        command=run.command,
        environment=run.environment,
        hang_s=run.hang_s,
    )


def to_spectrum(data: LineSpectrum | None, run: TestRun, *, scope: SpectrumScope) -> Spectrum:
    """The plugin's output of a traced ``run`` as the core's :class:`Spectrum` (one-line note on trouble)."""
    notes: list[str] = []
    if run.hang_s > 0:
        hung = next((f.id for f in run.failures if f.type == "timeout"), "a test")
        notes.append(f"stopped: {hung} hung under tracing; partial spectrum")
    elif run.killed_by:
        notes.append(f"{run.killed_by} after {run.duration_s:.0f}s: partial spectrum")
    if data is None:
        notes.append(f"no spectrum written (exit code {run.exit_code})")
        data = LineSpectrum()
    else:
        if data.note:
            notes.append(data.note)
        if data.dropped:
            notes.append(f"output too large: {data.dropped} least suspicious lines left out")
        if data.disturbed:
            notes.append(f"{data.disturbed} tests replaced the trace function (lines missing)")
        if not data.failed:
            notes.append("no failing test was traced")
    if run.environment:
        notes.append(run.environment)
    return Spectrum(
        failed=data.failed,
        passed=data.passed,
        lines=data.lines,
        scope=scope,
        duration_s=run.duration_s,
        complete=data.complete and run.killed_by is None,
        note="; ".join(notes),
    )


def write_change(workspace: Path, change: AppliedEdits) -> None:
    """Write ``change``'s resulting files into ``workspace`` (create, overwrite, delete; modes kept).

    Through :mod:`runners.wsfs`: a path with a symlink on the way is refused
    (:class:`~runners.wsfs.Refused`, a ``ValueError`` here), a symlink at the path itself is
    replaced by the file, never written through."""
    for c in change.changes:
        try:
            if c.after is None:
                wsfs.unlink(workspace, c.path)
            else:
                wsfs.write_bytes(
                    workspace, c.path, c.after.encode("utf-8"), mode=0o755 if c.mode & 0o111 else 0o644
                )
        except wsfs.Refused as exc:
            raise ValueError(f"{c.path} escapes the workspace: {exc}") from None


class SandboxWorkbench:
    """See the module docstring. Use as a context manager (or call :meth:`close`)."""

    def __init__(
        self,
        repo: Path,
        command: ResolvedCommand,
        runner: Runner,
        *,
        workspace_root: Path | None = None,
        memory_mb: int = 2048,
        env: Mapping[str, str] | None = None,
        exclude: Sequence[str] = (),
        toolchain: str = "",
        hang_probe: HangProbe | None = HangProbe(),  # noqa: B008 - frozen, shared safely
    ) -> None:
        self.repo = Path(repo).resolve()
        self.hang_probe = hang_probe
        """Stops a pytest run early when one test hangs (:mod:`runners.hang`); None: off."""
        self.exact = command
        root = self.repo / command.workdir if command.workdir else self.repo
        self.observation = without_fail_fast(command.command, command.framework, root=root)
        self.command = replace(command, command=self.observation.command)
        """The diagnosis command (fail-fast flags removed)."""
        self.toolchain = toolchain
        self.runner = runner
        self._share = shareable(runner, command.setup)
        """Dependency folders every copy mounts read-only instead of copying (node_modules)."""
        self.workspace_root = workspace_root
        self.memory_mb = memory_mb
        self.env = dict(env or {})
        self.exclude = tuple(exclude)
        self._source: DirectorySource | None = None
        self._stack = contextlib.ExitStack()
        self._scratch: Path | None = None
        self.runs = 0
        self._limits: dict[str, float] | None = None
        """Per-test hang limits from the baseline (None until it ran)."""
        self.observed_hang = ""
        """The test the baseline's probe stopped as a hang ('' when none)."""

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        """Remove the scratch copy."""
        self._stack.close()
        self._scratch = None

    def __enter__(self) -> SandboxWorkbench:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- Workbench -------------------------------------------------------------------------------

    @property
    def framework(self) -> str:
        """The resolved command's framework ('' when unknown)."""
        return self.command.framework or ""

    @property
    def commands(self) -> dict[str, Any]:
        """Which command diagnoses and which verifies (recorded in the trace)."""
        return {
            "diagnosis": self.command.command,
            "verification": self.exact.command,
            **{k: v for k, v in self.observation.to_dict().items() if k != "command"},
            "toolchain": self.toolchain,
        }

    @property
    def hang_limits(self) -> dict[str, float]:
        """What the baseline set for later runs: ``hung_s`` (the limit of the test it stopped as a
        hang, 0 when none), ``floor_s`` (the shortest limit), ``tests`` (how many have one); {}
        before the baseline or without per-test limits."""
        if not self._limits or self.hang_probe is None:
            return {}
        hung = self.observed_hang
        return {
            "hung_s": self._limits.get(hung, 0.0) if hung else 0.0,
            "floor_s": min(self._limits.values()),
            "tests": float(len(self._limits)),
        }

    def source(self) -> DirectorySource:
        """The base tree's indexable files (listed once)."""
        if self._source is None:
            self._source = DirectorySource.of(self.repo, exclude=self.exclude)
        return self._source

    def preview(self, edits: Sequence[Edit]) -> AppliedEdits:
        """Apply ``edits`` in the scratch copy, record the change, restore the copy."""
        scratch = self._scratch_copy()
        try:
            applied = apply_edits(scratch, edits)
        except BaseException:
            self._restore(scratch, [e.path for e in edits])
            raise
        self._restore(scratch, applied.paths)
        return applied

    def run_tests(
        self, change: AppliedEdits | None, *, select: Sequence[str] | None = None, timeout_s: float
    ) -> TestOutcome:
        """Run the (narrowed) command on base + ``change`` in a fresh copy; never raises for test trouble."""
        resolved = self.command
        selected = False
        if select:
            narrowed = self.command.selecting(list(select))
            if narrowed is not None:
                resolved, selected = narrowed, True
        return self._run(change, resolved, selected=selected, timeout_s=timeout_s)

    def verify(self, change: AppliedEdits | None, *, timeout_s: float) -> TestOutcome:
        """Run the exact command as given on base + ``change`` in a fresh copy (never raises for test trouble).

        No hang probe here: the verdict rests on the user's command exactly as CI runs it."""
        return self._run(change, self.exact, selected=False, timeout_s=timeout_s, probe=False)

    def _run(
        self,
        change: AppliedEdits | None,
        resolved: ResolvedCommand,
        *,
        selected: bool,
        timeout_s: float,
        probe: bool = True,
    ) -> TestOutcome:
        self.runs += 1
        probe = probe and self.hang_probe is not None
        baseline = probe and change is None and not selected and self._limits is None
        with contextlib.ExitStack() as stack:
            ws = stack.enter_context(
                ephemeral_workspace(self.repo, root=self.workspace_root, share=self._share)
            )
            private = stack.enter_context(private_folder(self.workspace_root)) if probe else None
            if change is not None:
                write_change(ws, change)
            if private is not None and self._limits:
                write_limits(private, self._limits)
            run = run_in_workspace(
                self.runner,
                ws,
                resolved,
                timeout_s=timeout_s,
                memory_mb=self.memory_mb,
                env=self.env,
                hang_probe=self.hang_probe if probe else None,
                private=private,
            )
        if baseline:
            # Measured once: every later run of this repair shares the baseline's per-test limits.
            self._limits = limits_of(run)
            self.observed_hang = next(
                (r.id for r in run.results if run.hang_s > 0 and r.failure and r.failure.type == "timeout"),
                "",
            )
        return to_outcome(run, selected=selected)

    # -- Profiler --------------------------------------------------------------------------------

    def spectrum(
        self, failing: Sequence[str], *, suite: bool, timeout_s: float, also: Sequence[str] = ()
    ) -> Spectrum | None:
        """:class:`~jobs.repair.spectrum.Profiler`: trace the base tree's tests in a fresh copy.

        None when the framework is not pytest, no id of ``failing`` names a ``.py`` file, or the
        command cannot be traced. ``suite``: the diagnosis command; else narrowed to the files of
        ``failing``, or to ``failing`` and ``also`` by id when ``also`` names tests. The test the baseline stopped as a hang is deselected; the hang probe stays on
        with the baseline's limits, :data:`TRACE_SLOWDOWN` times longer. One sandboxed execution;
        never raises for test trouble (a timeout gives a partial spectrum, ``complete=False``)."""
        files = list(dict.fromkeys(t.split("::", 1)[0] for t in failing))
        files = [f for f in files if f.endswith(".py")]
        if self.framework != "pytest" or not files:
            return None
        scope: SpectrumScope = "suite" if suite else "tests" if also else "files"
        picked = files if scope == "files" else list(dict.fromkeys([*failing, *also]))
        resolved = self.command if suite else self.command.selecting(picked)
        if resolved is None:
            return None
        if self.observed_hang:
            resolved = deselecting(resolved, [self.observed_hang])
        traced = trace_command(resolved)
        if traced is None:
            return None
        self.runs += 1
        probe = self.hang_probe
        if probe is not None:
            probe = replace(probe, probe_s=probe.probe_s * TRACE_SLOWDOWN)
        with (
            ephemeral_workspace(self.repo, root=self.workspace_root, share=self._share) as ws,
            private_folder(self.workspace_root) as private,
        ):
            install_spectrum(private)
            if probe is not None and self._limits:
                write_limits(private, {k: v * TRACE_SLOWDOWN for k, v in self._limits.items()})
            run = run_in_workspace(
                self.runner,
                ws,
                traced,
                timeout_s=timeout_s,
                memory_mb=self.memory_mb,
                env=self.env,
                hang_probe=probe,
                private=private,
            )
            data = read_spectrum(private)
        return to_spectrum(data, run, scope=scope)

    # -- Prober ----------------------------------------------------------------------------------

    def probe(self, change: AppliedEdits | None, script: str, *, timeout_s: float) -> ProbeRun:
        """:class:`~jobs.repair.behaviour.Prober`: run ``script`` (written into the run's private
        folder, never into the copy: a repository could plant a link there) with the test command's
        interpreter and environment, after ``setup``, in a fresh copy of base + ``change``; its
        output file read back capped. One sandboxed execution; never raises for trouble in the script."""
        self.runs += 1
        env = {**self.command.env, **self.env}
        with (
            ephemeral_workspace(self.repo, root=self.workspace_root, share=self._share) as ws,
            private_folder(self.workspace_root) as private,
        ):
            if change is not None:
                write_change(ws, change)
            folder = PROBE_SCRIPT.rsplit("/", 1)[0]
            with wsfs.directory(private, folder, create=True) as fd:
                os.fchmod(fd, 0o777)  # the sandbox user may differ from the folder's owner
            wsfs.write_text(private, PROBE_SCRIPT, script, mode=0o644)
            if self.command.setup:
                setup = self.runner.run(
                    ws,
                    self.command.setup,
                    timeout_s=timeout_s,
                    memory_mb=self.memory_mb,
                    network=True,
                    env=env,
                )
                if not setup.ok:
                    return ProbeRun(note=f"setup failed ({setup.killed_by or setup.exit_code})")
            run = self.runner.run(
                ws,
                f'python "${PRIVATE_ENV}/{PROBE_SCRIPT}"',
                timeout_s=timeout_s,
                memory_mb=self.memory_mb,
                env=env,
                private=private,
            )
            try:
                output = wsfs.read_text(private, PROBE_OUTPUT, limit=PROBE_OUTPUT_CAP, errors="replace")
            except OSError:  # absent, a link, not a regular file, or too large: nothing to compare
                output = ""
        tail = (run.stderr.strip().splitlines() or [""])[-1][:200]
        note = "" if output else (run.killed_by or f"exit {run.exit_code}") + (f": {tail}" if tail else "")
        return ProbeRun(output=output, note=note, duration_s=run.duration_s)

    # -- scratch ---------------------------------------------------------------------------------

    def _scratch_copy(self) -> Path:
        if self._scratch is None:
            self._scratch = self._stack.enter_context(
                ephemeral_workspace(self.repo, root=self.workspace_root, share=self._share)
            )
        return self._scratch

    def _restore(self, scratch: Path, paths: Sequence[str]) -> None:
        """Make ``paths`` in the scratch copy equal to the original tree again.

        Both sides through :mod:`runners.wsfs`: a path with a link on the way is skipped; a
        regular file of the original is copied back (whatever the copy holds there now is
        replaced), an entry the original does not have is removed."""
        for rel in paths:
            rel = rel.lstrip("/")
            try:
                original = wsfs.entry_stat(self.repo, rel)
                if original is not None and stat.S_ISREG(original.st_mode):
                    data = wsfs.read_bytes(self.repo, rel, limit=_RESTORE_LIMIT, whole=True)
                    if (now := wsfs.entry_stat(scratch, rel)) is not None and stat.S_ISDIR(now.st_mode):
                        wsfs.remove(scratch, rel)
                    wsfs.write_bytes(scratch, rel, data, mode=stat.S_IMODE(original.st_mode))
                elif original is None and wsfs.entry_stat(scratch, rel) is not None:
                    wsfs.remove(scratch, rel)
            except OSError:
                continue


__all__ = [
    "DirectorySource",
    "SandboxWorkbench",
    "SystemClock",
    "to_failure",
    "to_outcome",
    "to_spectrum",
    "write_change",
]
