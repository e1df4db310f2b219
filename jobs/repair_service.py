"""Old names of the worker's repair and index services, kept for one release.

The repair service is :class:`jobs.engine.FixRepairService` (it runs a :class:`jobs.plan.RepairPlan`
and returns a :class:`jobs.repair.report.RepairReport`), the index service
:class:`jobs.index_jobs.RepoIndexService`.
"""

from __future__ import annotations

from jobs.engine import FixRepairService
from jobs.engine_ports import changed_files, worker_toolchains
from jobs.index_jobs import RepoIndexService

__all__ = ["FixRepairService", "RepoIndexService", "changed_files", "worker_toolchains"]
