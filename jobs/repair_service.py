"""The worker's repair service: :class:`FixRepairService`, the :class:`jobs.ports.RepairService` that
runs a :class:`jobs.plan.RepairPlan` through :func:`jobs.engine.run` with the worker's plan defaults
(model, parallelism, toolchains) and its ports (the repository's own index through
:class:`jobs.ports.IndexPort`, ``owner/name`` at the attempt's commit, the test history).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from jobs.dependency_changes import Fetch
from jobs.engine import EngineConfig, EnginePorts, EngineSettings, LoopRun, execute, report_of
from jobs.engine_ports import attempt_index, worker_toolchains
from jobs.plan import LLMRef, PlanDefaults, RepairPlan
from jobs.repair.llm import LLM
from jobs.repair.ports import Clock, Interrupt
from jobs.repair.report import RepairReport
from jobs.test_history import HistoryStore
from jobs.wiring import LLMConfig, default_parallel
from jobs.wiring import llm_config as read_llm_config
from runners.base import Runner

if TYPE_CHECKING:
    from jobs.ports import IndexPort

log = structlog.get_logger("arcs.engine")


Executor = Callable[[RepairPlan, EnginePorts], LoopRun]
"""The signature of :func:`execute` (replaced in tests)."""


@dataclass
class FixRepairService:
    """:class:`jobs.ports.RepairService` on top of :func:`run` (see the module docstring).

    - Defaults for :func:`jobs.plan.plan_for`: a model when one is injected or ``llm_config``
      holds a key (:func:`jobs.wiring.llm_config`, the one place that reads it; the composition
      root passes it, None: resolved from ``settings`` by the same function); with bubblewrap, the worker's own Python environment as toolchain.
    - Index: the repository's own (the plan's ``owner/name`` at ``head_sha``) through ``index``,
      the worker's :class:`jobs.ports.IndexPort` (None: one built from the settings).
    - Files: the plan applies the fix to the (throw-away) checkout; the report reads them back.

    ``runner``/``llm``/``clock``/``executor`` replace the real ports in tests.
    """

    settings: EngineSettings
    runner: Runner | None = None
    llm: LLM | None = None
    clock: Clock | None = None
    toolchains: tuple[Path, ...] | None = None
    """None: :func:`jobs.engine_ports.worker_toolchains`."""
    unsafe_no_sandbox: bool = False
    use_index: bool = True
    parallel: int | None = None
    executor: Executor | None = None
    index: IndexPort | None = None
    llm_config: LLMConfig | None = None
    history: HistoryStore | None = None
    """The repository's test history (#26): the culprit bisect reads the targets' flake rate."""
    fetch: Fetch | None = None
    """Unpacks a bumped dependency's versions (#27; None: the engine downloads from the index)."""

    def resolved_llm(self) -> LLMConfig:
        """``llm_config``, else :func:`jobs.wiring.llm_config` of the settings (resolved once)."""
        if self.llm_config is None:
            self.llm_config = read_llm_config(self.settings)
        return self.llm_config

    @property
    def has_llm(self) -> bool:
        """A model is available (an injected one, or a configured key)."""
        return self.llm is not None or self.resolved_llm().configured

    @property
    def defaults(self) -> PlanDefaults:
        """What the worker decides for every plan."""
        llm = self.resolved_llm()
        return PlanDefaults(
            llm=LLMRef(llm.model, llm.base_url) if self.has_llm else None,
            parallel=self.parallel or default_parallel(),
            toolchains=self.toolchains if self.toolchains is not None else worker_toolchains(),
            unsafe_no_sandbox=self.unsafe_no_sandbox,
            use_index=self.use_index,
        )

    def index_port(self) -> IndexPort:
        """The index repairs read (built from the settings on first use when none was given)."""
        if self.index is None:
            from jobs.index_jobs import RepoIndexService

            self.index = RepoIndexService(self.settings)
        return self.index

    def ports(self, plan: RepairPlan, interrupt: Interrupt | None = None) -> EnginePorts:
        """The ports ``plan`` runs with in the worker."""
        index = None
        if plan.index is not None and plan.index.repo_id is not None:
            index = attempt_index(self.index_port(), plan.index.repo_id, plan.index.commit or plan.head_sha)
        return EnginePorts(
            config=EngineConfig.of(self.settings),
            api_key=self.resolved_llm().api_key,
            runner=self.runner,
            llm=self.llm,
            clock=self.clock,
            progress=lambda message: log.info("repair.progress", message=message[:300]),
            interrupt=interrupt,
            index=index,
            history=self.history,
            fetch=self.fetch,
        )

    def run(self, plan: RepairPlan, *, interrupt: Interrupt | None = None) -> RepairReport:
        """Run ``plan`` on its checkout; the loop's own failures are data in the report."""
        log.info(
            "repair.start",
            kind=plan.kind,
            tier=plan.tier,
            targets=len(plan.ci_tests),
            failure_class=plan.failure_class or None,
            usd=plan.budget.usd,
        )
        report = report_of((self.executor or execute)(plan, self.ports(plan, interrupt)), plan)
        log.info("repair.done", verdict=report.verdict, fixed=report.fixed, files=len(report.files))
        return report


__all__ = ["Executor", "FixRepairService"]
