"""Run a repository's tests once: private workspace, sandboxed command, JUnit artifact, parsed results."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

from runners import wsfs
from runners.base import Runner
from runners.commands import ResolvedCommand
from runners.environment import diagnose
from runners.hang import HangProbe, HangReport, install, probe_command, read_hang, shell_prefix
from runners.hang_node import NodeHang, node_hang
from runners.results import (
    Frame,
    TestFailure,
    TestResult,
    TestRun,
    hang_frames,
    localize,
    parse_output,
    strip_ansi,
)

WorkspaceFactory = Callable[[Path], AbstractContextManager[Path]]
"""Makes a private copy of a tree for one run and removes it afterwards."""

SANDBOX_ROOTS: tuple[str, ...] = ("/workspace",)
"""Where sandboxes mount the workspace (see ``runners.sandbox.SANDBOX_WORKDIR``); stripped from paths."""

SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "target",
        ".arcs",
    }
)
"""Folders never listed or diffed: VCS, dependencies, caches (tools write them during a run)."""
MAX_LISTED_FILES = 200_000
GO_MOD_HEAD = 64 << 10
"""How much of a ``go.mod`` the host reads: its ``module`` line comes first."""
SETUP_TIMEOUT_S = 300.0
"""The least time a ``setup:`` step gets (downloads and builds), whatever the tests' timeout."""


def default_workspace(root: Path | None = None, *, share: Sequence[str] = ()) -> WorkspaceFactory:
    """``runners.workspace.ephemeral_workspace`` under ``root`` (imported on use), ``share`` d
    dependency folders mounted rather than copied."""

    def factory(src: Path) -> AbstractContextManager[Path]:
        from runners.workspace import ephemeral_workspace

        return ephemeral_workspace(src, root=root, share=share)

    return factory


def list_repo_files(root: Path, *, limit: int = MAX_LISTED_FILES) -> list[str]:
    """Repository-relative POSIX paths of the files under ``root`` (VCS, dependency and cache folders skipped)."""
    out: list[str] = []
    base = str(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel = os.path.relpath(dirpath, base)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in sorted(filenames):
            out.append(prefix + name)
            if len(out) >= limit:
                return out
    return out


def go_packages(root: Path, files: Collection[str]) -> dict[str, str]:
    """Go import path -> repository folder, for every folder with ``.go`` files under a ``go.mod``.

    Each ``go.mod`` is read through :mod:`runners.wsfs` (the tests ran in ``root``: it may be a
    symlink, a FIFO or huge by now), its first :data:`GO_MOD_HEAD` bytes only."""
    modules: dict[str, str] = {}
    for f in files:
        if f == "go.mod" or f.endswith("/go.mod"):
            folder = f[: -len("go.mod")].rstrip("/")
            with contextlib.suppress(OSError):
                head = wsfs.read_text(root, f, limit=GO_MOD_HEAD, errors="replace")
                m = re.search(r"^module\s+(\S+)", head, re.M)
                if m:
                    modules[folder] = m.group(1).strip('"')
    packages: dict[str, str] = {}
    for f in files:
        if not f.endswith(".go"):
            continue
        folder = f.rsplit("/", 1)[0] if "/" in f else ""
        # The innermost module that contains this folder.
        owner = max(
            (m for m in modules if m == "" or folder == m or folder.startswith(m + "/")),
            key=len,
            default=None,
        )
        if owner is None:
            continue
        rel = folder[len(owner) :].strip("/")
        packages[f"{modules[owner]}/{rel}" if rel else modules[owner]] = folder
    return packages


def run_in_workspace(
    runner: Runner,
    workspace: Path,
    resolved: ResolvedCommand,
    *,
    timeout_s: float = 600.0,
    memory_mb: int = 2048,
    env: Mapping[str, str] | None = None,
    setup_network: bool = True,
    hang_probe: HangProbe | None = None,
    private: Path | None = None,
) -> TestRun:
    """Run ``resolved`` (after its ``setup``) in an existing private ``workspace`` and parse the results.

    ``setup`` (``.arcs.yml``) may reach the network when ``setup_network`` (installing dependencies);
    the tests themselves never do. ``hang_probe`` (pytest and ``node --test``, :mod:`runners.hang`)
    stops the run early when one test hangs, its probe never longer than a third of ``timeout_s``:
    the result is ``killed_by="timeout"`` with that test failed as ``timeout`` (frames of where it
    hung) and, for pytest, the tests observed before it.

    ``private`` is the run's private folder (:func:`runners.workspace.private_folder`), where the
    probe (and a caller's tracer) live, outside the repository's tree; a probed run without one
    gets its own for the run.
    """
    with contextlib.ExitStack() as stack:
        if private is None and hang_probe is not None and probe_command(resolved, hang_probe) is not None:
            from runners.workspace import private_folder

            private = stack.enter_context(private_folder())
        return _run_in_workspace(
            runner,
            workspace,
            resolved,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            env=env,
            setup_network=setup_network,
            hang_probe=hang_probe,
            private=private,
        )


def _run_in_workspace(
    runner: Runner,
    workspace: Path,
    resolved: ResolvedCommand,
    *,
    timeout_s: float,
    memory_mb: int,
    env: Mapping[str, str] | None,
    setup_network: bool,
    hang_probe: HangProbe | None,
    private: Path | None,
) -> TestRun:
    full_env = {**resolved.env, **(env or {})}
    if resolved.setup:
        setup = runner.run(
            workspace,
            resolved.setup_shell or resolved.setup,
            # A candidate's timeout is measured on the tests alone; installing takes its own time.
            timeout_s=max(timeout_s, SETUP_TIMEOUT_S),
            memory_mb=memory_mb,
            network=setup_network,
            env=full_env,
        )
        if not setup.ok:
            tail = [ln for ln in strip_ansi(setup.stdout + "\n" + setup.stderr).splitlines() if ln.strip()][
                -8:
            ]
            why = setup.limit.removeprefix("stopped: ") or setup.killed_by or f"exit code {setup.exit_code}"
            failed_setup = TestRun(
                command=resolved.command,
                exit_code=setup.exit_code,
                duration_s=setup.duration_s,
                errors=(
                    TestFailure(
                        id="<setup>", type="setup", message=f"setup failed ({why})\n" + "\n".join(tail)
                    ),
                ),
                truncated=setup.truncated,
                killed_by=setup.killed_by,
                framework=resolved.framework,
            )
            problem = diagnose(
                failed_setup, output=f"{setup.stdout}\n{setup.stderr}", command=resolved.command
            )
            return replace(failed_setup, environment=problem.line if problem else "")
    if hang_probe is not None:
        # A test that alone takes a third of the run's time budget is suspect even when the
        # configured probe is longer: a short candidate timeout makes a short probe.
        hang_probe = replace(hang_probe, probe_s=min(hang_probe.probe_s, timeout_s / 3))
    probed = probe_command(resolved, hang_probe) if hang_probe is not None else None
    shell = resolved.shell
    if probed is not None and hang_probe is not None and private is not None:
        install(private, resolved.framework)
        shell = shell_prefix(hang_probe, resolved.framework) + probed.shell
    else:
        probed = None
    execution = runner.run(
        workspace,
        shell,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        env=full_env,
        collect=resolved.collect,
        private=private,
    )
    probing = probed is not None and execution.killed_by is None
    hang = (
        read_hang(private, exit_code=execution.exit_code, output=execution.stderr)
        if probing and private is not None and resolved.framework == "pytest"
        else None
    )
    if hang is not None:
        run = hang_run(resolved, execution.exit_code, execution.duration_s, hang, execution.stderr)
    else:
        run = parse_output(execution, resolved.framework, junit_artifacts=resolved.collect)
        run = replace(run, command=resolved.command)
        if probing and resolved.framework == "node" and execution.exit_code != 0:
            stopped = node_hang(f"{execution.stdout}\n{execution.stderr}")
            if stopped is not None:
                run = node_hang_run(run, stopped)
    files = list_repo_files(workspace)
    roots = (*SANDBOX_ROOTS, str(workspace), str(workspace.resolve()))
    if resolved.workdir:
        roots = (*(f"{r}/{resolved.workdir}" for r in roots), *roots)
    packages = go_packages(workspace, files) if resolved.framework == "go" else None
    run = localize(run, files, roots=roots, go_packages=packages)
    problem = diagnose(
        run, output=f"{execution.stdout}\n{execution.stderr}", command=resolved.command, repo_files=files
    )
    return replace(run, environment=problem.line) if problem is not None else run


def run_tests(
    runner: Runner,
    repo: Path,
    resolved: ResolvedCommand,
    *,
    timeout_s: float = 600.0,
    memory_mb: int = 2048,
    env: Mapping[str, str] | None = None,
    workspace: WorkspaceFactory | None = None,
    setup_network: bool = True,
    hang_probe: HangProbe | None = None,
) -> TestRun:
    """Copy ``repo`` into a fresh workspace, run the tests there, and return per-test results.

    The repository itself is never written to. ``workspace`` makes the copy (default:
    :func:`runners.workspace.ephemeral_workspace` in the default root).
    """
    if workspace is None:
        from runners.workspace import shareable

        workspace = default_workspace(share=shareable(runner, resolved.setup))
    factory = workspace
    with factory(Path(repo)) as ws:
        return run_in_workspace(
            runner,
            ws,
            resolved,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            env=env,
            setup_network=setup_network,
            hang_probe=hang_probe,
        )


def hang_run(
    resolved: ResolvedCommand, exit_code: int, duration_s: float, hang: HangReport, stderr: str
) -> TestRun:
    """The :class:`TestRun` of a run the hang probe stopped: the tests it saw finish, and the hung
    test failed with type ``timeout`` and the frames faulthandler dumped."""
    outcomes: dict[str, TestResult] = {}
    for o in hang.observed:
        bad = o.outcome == "failed"
        outcome = ("failed" if o.when == "call" else "error") if bad else o.outcome
        if outcome not in ("passed", "failed", "error", "skipped"):
            continue
        prev = outcomes.get(o.id)
        if prev is not None and prev.outcome in ("failed", "error"):
            continue  # a teardown pass does not undo a failed call
        failure = TestFailure(o.id, type=o.type or "failed", message=o.message) if bad else None
        outcomes[o.id] = TestResult(o.id, outcome, o.duration_s, failure)  # type: ignore[arg-type]
    frames = hang_frames(stderr)
    message = (
        f"timed out: the test ran longer than {hang.limit_s:.1f}s (the run had been going "
        f"{hang.before_s:.1f}s when it started); stopped as a hang"
    )
    inner: Frame | None = frames[-1] if frames else None
    if inner is not None:
        where = inner.file.removeprefix("/workspace/")
        message += f"; it was running {inner.function or '?'} ({where}:{inner.line})"
    failure = TestFailure(
        id=hang.test_id,
        file=inner.file if inner else None,
        line=inner.line if inner else None,
        type="timeout",
        message=message,
        frames=tuple(frames),
    )
    outcomes[hang.test_id] = TestResult(hang.test_id, "failed", hang.limit_s, failure)
    return TestRun(
        command=resolved.command,
        exit_code=exit_code,
        duration_s=duration_s,
        results=tuple(outcomes.values()),
        killed_by="timeout",
        source="text",
        framework=resolved.framework,
        hang_s=hang.limit_s,
    )


def node_hang_run(run: TestRun, hang: NodeHang) -> TestRun:
    """``run`` of a ``node --test`` command whose probe stopped a test file: ``killed_by="timeout"``,
    and the file's failure (the one holding the hung test's frames, else every load failure of a
    killed file, else a new run-level one) becomes a ``timeout`` failure with the paused stack."""
    inner = hang.frames[-1] if hang.frames else None
    message = (
        f"timed out: test {hang.test_name!r} ran longer than {hang.limit_s:.1f}s (its file had been "
        f"running {hang.before_s:.1f}s when it started); stopped as a hang"
    )
    if inner is not None:
        where = inner.file.removeprefix("/workspace/")
        message += f"; it was running {inner.function or '?'} ({where}:{inner.line})"
    files = {f.file for f in hang.frames}

    def as_timeout(f: TestFailure) -> TestFailure:
        return replace(
            f,
            type="timeout",
            message=message,
            frames=hang.frames,
            file=inner.file if inner else f.file,
            line=inner.line if inner else f.line,
        )

    def hung(f: TestFailure) -> bool:
        return bool(f.file and (f.file in files or f.id in files))

    errors = list(run.errors)
    results = list(run.results)
    matched = any(hung(e) for e in errors) or any(r.failure is not None and hung(r.failure) for r in results)
    if not matched:
        hung = lambda f: f.type == "load"  # noqa: E731 - the killed file is reported as a load failure
        matched = any(hung(e) for e in errors)
    if matched:
        errors = [as_timeout(e) if hung(e) else e for e in errors]
        results = [
            replace(r, failure=as_timeout(r.failure)) if r.failure is not None and hung(r.failure) else r
            for r in results
        ]
    else:
        errors.append(
            TestFailure(
                "<run>",
                file=inner.file if inner else None,
                line=inner.line if inner else None,
                type="timeout",
                message=message,
                frames=hang.frames,
            )
        )
    return replace(
        run, errors=tuple(errors), results=tuple(results), killed_by="timeout", hang_s=hang.limit_s
    )
