"""One wiring of a repair (#25): :func:`build` makes the sandbox workbench, tier 0's change-first
wrapper (:func:`jobs.change_repair.change_aware`), the retrieval, the loop and the repair's one
:class:`~jobs.repair.meter.BudgetMeter`, and hands back a :class:`Repair` that runs them.

One meter for the whole repair (#25): the autofix and the early bisection (change-first), the
search and the culprit stage all charge it. The search runs in a window of it,
``meter.window(executions=window(E, R))``, ``R`` being what change-first may draw
(:attr:`jobs.change_repair.ChangeFirst.reserve`): the search's own runs are bounded by ``E - R``
exactly as the separate loop budget used to bound them, so every decision is the same.
:meth:`Repair.run` writes the trace's and the result's spend once, after the culprit stage.

Both :func:`jobs.engine.execute` (``arcs fix``, the worker, the Action) and :func:`jobs.replay.replay`
call it: the engine with live ports, replay with recorded ones (:class:`RepairPorts`
``recorded_tools``/``recorded_spectrum``, a replaying LLM, the recorded retrieval and interrupt).
What the two used to wire differently by hand — replay never bound the early bisection to its
workbench, ran the autofix's ``setup:`` without its fresh environment, and opened its workbench
without the repository's memory limit and the index's exclusions — is now one code path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.change_repair import ChangeFirst, change_aware
from jobs.culprit import ChangeOutcome
from jobs.dependency_stage import DependencyStage
from jobs.repair.budget import Budget
from jobs.repair.llm import LLM
from jobs.repair.loop import RepairLoop, RepairResult
from jobs.repair.loop_config import LoopConfig
from jobs.repair.meter import BudgetMeter
from jobs.repair.ports import Clock, Interrupt, Proposer
from jobs.repair.spec import RepairSpec
from jobs.repair.task import RepairTask
from jobs.repair.tier0.depupdate_stage import DependencyUpdateProposer
from jobs.repair.tiers import TierRequest
from jobs.sandbox_workbench import SandboxWorkbench
from runners.base import Runner

if TYPE_CHECKING:
    from jobs.repair.changes import ChangeSet
    from jobs.repair.loop import Retriever
    from jobs.repair.spectrum_context import RecordedSpectrum
    from jobs.repair.tools_session import RecordedTools
    from runners.commands import ResolvedCommand

Culprit = Callable[[RepairResult, BudgetMeter], ChangeOutcome]
"""The culprit stage after the search (:func:`jobs.culprit.after_loop` bound to the plan): it
charges its runs to the meter it is given."""

Retrieval = Callable[[], contextlib.AbstractContextManager[tuple["Retriever | None", str]]]
"""Opens the retrieval a repair searches: ``(retriever or None, index snapshot id)``."""


@dataclass(frozen=True, slots=True)
class RepairSetup:
    """The values one repair is wired from (the plan's, or the recorded run's in replay)."""

    repo: Path
    """The tree the repair runs on (replay: a copy with the recorded base text restored)."""
    command: ResolvedCommand
    budget: Budget
    """The whole budget, metered once; the search spends in a window of it (:attr:`Repair.window`)."""
    loop: LoopConfig
    changes: ChangeSet | None = None
    memory_mb: int = 2048
    exclude: tuple[str, ...] = ()
    """Paths the source view (and so the recorded tree digest) leaves out: the index's exclusions."""
    toolchain: str = ""
    """One line naming the sandbox's toolchain (recorded with each verification)."""
    dependencies: DependencyStage | None = None
    """The dependency-update stage (#27): the engine's, prepared by fetching; replay's, recorded."""


@dataclass(frozen=True, slots=True)
class RepairPorts:
    """The effects one repair runs with: live in the engine, recorded in ``arcs replay``."""

    runner: Runner
    proposer: Proposer
    """The tier's proposer, before the change-first wrapper."""
    clock: Clock
    llm: LLM | None = None
    """The model the loop's roles call (recording, or replaying); None: tier 0."""
    interrupt: Interrupt | None = None
    retrieval: Retrieval | None = None
    """None: no retrieval."""
    recorded_tools: RecordedTools | None = None
    recorded_spectrum: RecordedSpectrum | None = None


@dataclass(frozen=True, slots=True)
class Repair:
    """A wired repair: run it with :meth:`run`; the workbench stays open until :func:`build` exits."""

    setup: RepairSetup
    loop: RepairLoop
    workbench: SandboxWorkbench
    first: ChangeFirst
    """Tier 0's first offers: what they reserve and found."""
    meter: BudgetMeter
    """The whole repair's meter (its clock starts in :meth:`run`)."""
    snapshot: str = ""
    """The index snapshot retrieval read ('' without retrieval)."""
    migrations: DependencyUpdateProposer | None = None
    """``dependency_updates: fix``: the proposer that offered the migrations (its ``offers``)."""

    @property
    def window(self) -> int:
        """The executions the search may spend: the whole budget's less what change-first may
        draw, never below 1 (all of them when it draws nothing)."""
        executions, reserve = self.setup.budget.executions, self.first.reserve
        return executions if reserve <= 0 else max(1, executions - reserve)

    def run(
        self, task: RepairTask, tier: TierRequest, culprit: Culprit | None = None
    ) -> tuple[RepairResult, ChangeOutcome]:
        """Reproduce and repair ``task`` in a window of the meter, then (``culprit``) look for
        the culprit on what the meter has left; the result and its trace carry the whole spend."""
        deps = self.setup.dependencies
        if deps is not None:  # the LLM tiers' section of what changed in the dependencies
            task = deps.task(task, self.workbench.source())
        spec = RepairSpec(task=task, budget=self.setup.budget, tier=tier, loop=self.setup.loop)
        self.meter.start()
        result = self.loop.run(spec, meter=self.meter.window(executions=self.window))
        change = culprit(result, self.meter) if culprit is not None else ChangeOutcome()
        spend = self.meter.spend()
        result.trace.spend = spend  # the one write of the spend: everything the repair ran
        return replace(result, spend=spend), change


@contextlib.contextmanager
def build(setup: RepairSetup, ports: RepairPorts) -> Iterator[Repair]:
    """Wire the repair of ``setup`` with ``ports`` (see the module docstring); the workbench and the
    retrieval are closed on exit."""
    with contextlib.ExitStack() as stack:
        command = setup.command
        # Started when the repair runs (as the loop's own meter was), not while it is wired.
        meter = BudgetMeter(setup.budget, ports.clock, reserve_s=setup.loop.min_wall_s, started=False)
        workbench = stack.enter_context(
            SandboxWorkbench(
                setup.repo,
                command,
                ports.runner,
                memory_mb=setup.memory_mb,
                exclude=setup.exclude,
                toolchain=setup.toolchain,
            )
        )
        # Tier 0's first offers (#14): a formatter check's own fix, reverts of the change since
        # green; the early bisection runs in this workbench.
        deps = setup.dependencies
        first = (
            ChangeFirst(ports.proposer)
            if deps is not None and deps.mode == "comment"
            else change_aware(
                ports.proposer,
                check=command.command,
                changes=setup.changes,
                repo=setup.repo,
                runner=ports.runner,
                workbench=workbench,
                count=meter.count_runs,
                memory_mb=setup.memory_mb,
                env=command.env,
                setup=command.setup_shell,
                max_runs=setup.budget.executions // 2,
            )
        )
        migrations: DependencyUpdateProposer | None = None
        if deps is not None:
            # The migrations go first, before the change-first offers (#27); `comment` searches nothing.
            asked = deps.proposer(first.proposer)
            if isinstance(asked, DependencyUpdateProposer):
                migrations = asked
            first = replace(first, proposer=asked)
        retriever: Retriever | None = None
        snapshot = ""
        if ports.retrieval is not None:
            retriever, snapshot = stack.enter_context(ports.retrieval())
        loop = RepairLoop(
            retriever,
            first.proposer,
            workbench,
            ports.clock,
            llm=ports.llm,
            config=setup.loop,
            interrupt=ports.interrupt,
            tool_replay=ports.recorded_tools,
            spectrum_replay=ports.recorded_spectrum,
        )
        yield Repair(setup, loop, workbench, first, meter, snapshot, migrations)


__all__ = ["Repair", "RepairPorts", "RepairSetup", "Retrieval", "build"]
