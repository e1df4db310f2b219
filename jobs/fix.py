"""``arcs fix``'s input and entry point: :class:`FixRequest` -> :func:`jobs.plan.for_cli` ->
:func:`jobs.engine.execute`. Also used by the Action, the demo, the benches and tests.

:class:`FixRequest` stays the CLI's input because it holds what belongs to the edge and not to a
plan: the model's key (:class:`LLMConfig`, from :func:`jobs.wiring.llm_config`) and the flags as typed. :func:`fix` reads the folder's
``.arcs.yml`` runner part (leniently, as ``arcs fix`` always did), turns the request into a
:class:`jobs.plan.RepairPlan` and runs it; it returns the loop's raw run (:data:`FixReport`: the
:class:`jobs.repair.loop.RepairResult` with its trace) because the CLI prints and the benches
measure that. :func:`jobs.engine.report_of` gives the :class:`jobs.repair.report.RepairReport`.
Replay lives in :mod:`jobs.replay` (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs import plan
from jobs.engine import (
    EngineConfig,
    EnginePorts,
    EngineSettings,
    LoopRun,
    execute,
    split_issue,
)
from jobs.engine_ports import RunnerConfig, describe_toolchain, make_runner, repo_toolchains
from jobs.repair.budget import Budget
from jobs.repair.changes import ChangeSet
from jobs.repair.loop_config import LoopConfig
from jobs.repair.tiers import TierRequest
from jobs.replay import RecordedInterrupt, ReplayReport, replay
from jobs.wiring import DEFAULT_MODEL, DEFAULT_PARALLEL, LLMConfig, default_parallel
from runners.base import Runner
from runners.config import RepoConfig

FixReport = LoopRun
"""What :func:`fix` returns (the name ``arcs fix`` and the benches know)."""


@dataclass(frozen=True, slots=True)
class FixRequest:
    """One repair of a local folder: what to fix, tier, budget and how (``arcs fix``'s flags)."""

    repo: Path
    test_command: str | None = None
    issue_text: str | None = None
    """Contents of ``--issue-file``: first line is the title, the rest the body."""
    tier: TierRequest = "auto"
    budget: Budget = field(default_factory=Budget)
    apply: bool = False
    trace_out: Path | None = None
    traces_dir: Path | None = None
    """Where traces go without ``trace_out`` (default ``<ARCS_HOME>/traces``)."""
    llm: LLMConfig = field(default_factory=LLMConfig)
    config: LoopConfig = field(default_factory=lambda: LoopConfig(parallel=default_parallel()))
    """The loop's settings; parallelism by default :func:`jobs.wiring.default_parallel` (the
    worker's and ``arcs fix --jobs``' default)."""
    unsafe_no_sandbox: bool = False
    toolchain_paths: tuple[Path, ...] = ()
    use_index: bool = True
    failure_class: str = ""
    """From the CI log analysis (``test``, ``build``…), recorded in the task."""
    ci_tests: tuple[str, ...] = ()
    """Failing tests the CI log names: preferred targets when they also fail in the sandbox."""
    hints: tuple[tuple[str, int], ...] = ()
    """``(path, line)`` the CI log points at: retrieval hints."""
    apply_partial: bool = False
    """With ``apply``: also apply a ``partial`` patch (``.arcs.yml`` ``open_pr_on_partial``)."""
    changes: ChangeSet | None = None
    """Last green -> red (``--since REF``; :func:`jobs.history.read_changeset`)."""


def plan_of(request: FixRequest, repo_config: RepoConfig) -> plan.RepairPlan:
    """The :class:`jobs.plan.RepairPlan` of ``request`` with the folder's ``.arcs.yml`` runner part."""
    return plan.for_cli(
        Path(request.repo),
        repo_config=repo_config,
        test_command=request.test_command,
        issue_text=request.issue_text,
        tier=request.tier,
        budget=request.budget,
        loop=request.config,
        llm=request.llm.ref,
        toolchains=request.toolchain_paths,
        unsafe_no_sandbox=request.unsafe_no_sandbox,
        use_index=request.use_index,
        apply=request.apply,
        apply_partial=request.apply_partial,
        trace_out=request.trace_out,
        traces_dir=request.traces_dir,
        failure_class=request.failure_class,
        ci_tests=request.ci_tests,
        hints=request.hints,
        changes=request.changes,
    )


def _make_runner(
    settings: EngineSettings, unsafe: bool, toolchains: tuple[Path, ...], setup_allow: tuple[str, ...] = ()
) -> Runner:
    """The runner the settings choose (``ARCS_RUNNER``…); ``unsafe`` (``--unsafe-no-sandbox``) wins."""
    return make_runner(RunnerConfig.of(settings), unsafe, toolchains, setup_allow)


def fix(settings: EngineSettings, request: FixRequest, **ports: Any) -> FixReport:
    """Repair the folder ``request.repo`` with ``settings``' configuration.

    ``ports`` are :class:`jobs.engine.EnginePorts`' fields (``runner``, ``llm``, ``clock``,
    ``progress``, ``interrupt``, ``index``, ``runner_factory``) plus ``repo_config`` (the runner
    part of ``.arcs.yml`` already read; None: read from the folder).
    """
    repo_config = ports.pop("repo_config", None)
    if repo_config is None:
        from jobs.config import load_repo_config

        repo_config = load_repo_config(Path(request.repo).expanduser())
    # Looked up on each call, so a test may replace `_make_runner`.
    ports.setdefault(
        "runner_factory", lambda unsafe, tools, allow: _make_runner(settings, unsafe, tools, allow)
    )
    engine_ports = EnginePorts(config=EngineConfig.of(settings), api_key=request.llm.api_key, **ports)
    return execute(plan_of(request, repo_config), engine_ports)


__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PARALLEL",
    "FixReport",
    "FixRequest",
    "LLMConfig",
    "RecordedInterrupt",
    "ReplayReport",
    "describe_toolchain",
    "fix",
    "plan_of",
    "replay",
    "repo_toolchains",
    "split_issue",
]
