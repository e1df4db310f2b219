"""Run a repository's tests once: private workspace, sandboxed command, JUnit artifact, parsed results."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

from runners.base import Runner
from runners.commands import ResolvedCommand
from runners.environment import diagnose
from runners.results import TestFailure, TestRun, localize, parse_output, strip_ansi

WorkspaceFactory = Callable[[Path], AbstractContextManager[Path]]
"""Makes a private copy of a tree for one run and removes it afterwards."""

SANDBOX_ROOTS: tuple[str, ...] = ("/workspace",)
"""Where sandboxes mount the workspace (see ``runners.sandbox.SANDBOX_WORKDIR``); stripped from paths."""

_SKIP_DIRS = frozenset(
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
        "target",
        ".arcs",
    }
)
MAX_LISTED_FILES = 200_000


def default_workspace(root: Path | None = None) -> WorkspaceFactory:
    """``runners.workspace.ephemeral_workspace`` under ``root`` (imported on use)."""

    def factory(src: Path) -> AbstractContextManager[Path]:
        from runners.workspace import ephemeral_workspace

        return ephemeral_workspace(src, root=root)

    return factory


def list_repo_files(root: Path, *, limit: int = MAX_LISTED_FILES) -> list[str]:
    """Repository-relative POSIX paths of the files under ``root`` (VCS, dependency and cache folders skipped)."""
    out: list[str] = []
    base = str(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        rel = os.path.relpath(dirpath, base)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in sorted(filenames):
            out.append(prefix + name)
            if len(out) >= limit:
                return out
    return out


def go_packages(root: Path, files: Collection[str]) -> dict[str, str]:
    """Go import path -> repository folder, for every folder with ``.go`` files under a ``go.mod``."""
    modules: dict[str, str] = {}
    for f in files:
        if f == "go.mod" or f.endswith("/go.mod"):
            folder = f[: -len("go.mod")].rstrip("/")
            with contextlib.suppress(OSError):
                m = re.search(r"^module\s+(\S+)", (root / f).read_text(encoding="utf-8"), re.M)
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
) -> TestRun:
    """Run ``resolved`` (after its ``setup``) in an existing private ``workspace`` and parse the results.

    ``setup`` (``.arcs.yml``) may reach the network when ``setup_network`` (installing dependencies);
    the tests themselves never do.
    """
    full_env = {**resolved.env, **(env or {})}
    if resolved.setup:
        setup = runner.run(
            workspace,
            resolved.setup,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            network=setup_network,
            env=full_env,
        )
        if not setup.ok:
            tail = [ln for ln in strip_ansi(setup.stdout + "\n" + setup.stderr).splitlines() if ln.strip()][
                -8:
            ]
            why = setup.killed_by or f"exit code {setup.exit_code}"
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
            problem = diagnose(failed_setup, output="", command=resolved.command)
            return replace(failed_setup, environment=problem.line if problem else "")
    execution = runner.run(
        workspace,
        resolved.shell,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        env=full_env,
        collect=resolved.collect,
    )
    run = parse_output(execution, resolved.framework, junit_artifacts=resolved.collect)
    run = replace(run, command=resolved.command)
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
) -> TestRun:
    """Copy ``repo`` into a fresh workspace, run the tests there, and return per-test results.

    The repository itself is never written to. ``workspace`` makes the copy (default:
    :func:`runners.workspace.ephemeral_workspace` in the default root).
    """
    factory = workspace or default_workspace()
    with factory(Path(repo)) as ws:
        return run_in_workspace(
            runner,
            ws,
            resolved,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            env=env,
            setup_network=setup_network,
        )


@contextlib.contextmanager
def in_place(src: Path) -> Iterator[Path]:
    """A :data:`WorkspaceFactory` that uses ``src`` itself (for callers that already hold a private copy)."""
    yield src
