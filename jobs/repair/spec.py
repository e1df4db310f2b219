"""What one repair is asked to do: :class:`RepairSpec`, the value :meth:`RepairLoop.run` takes."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.repair.budget import Budget
from jobs.repair.loop_config import LoopConfig
from jobs.repair.task import RepairTask
from jobs.repair.tiers import TierRequest


@dataclass(frozen=True, slots=True)
class RepairSpec:
    """The task, its budget, the tiers to try and the loop's settings: everything the pure core
    needs besides its ports (workbench, proposer, retriever, clock, model)."""

    task: RepairTask
    budget: Budget = field(default_factory=Budget)
    tier: TierRequest = "auto"
    loop: LoopConfig = field(default_factory=LoopConfig)


__all__ = ["RepairSpec"]
