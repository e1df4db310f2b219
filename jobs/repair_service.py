"""The real :class:`jobs.ports.RepairService`: :func:`jobs.fix.fix` on the pipeline's checkout.

The pipeline clones the commit to repair (through the GitHub gateway) and hands the checkout over;
this adapter chooses the tier and the budget, runs the repair loop with the runner the settings
choose (``ARCS_RUNNER``: bubblewrap, or docker with ``ARCS_RUNNER_IMAGE``/``ARCS_RUNNER_RUNTIME``;
built by :func:`runners.sandbox.make_runner` in :func:`jobs.fix.fix`) and maps the
:class:`jobs.fix.FixReport` onto a :class:`jobs.ports.RepairOutcome`.

- Tier: the request's (``/arcs fix --tier``), else ``.arcs.yml`` ``tier``, else ``auto``; always
  ``0`` (templates) when no Anthropic key is configured, so a deployment without a model still
  repairs what the templates can.
- Budget: ARCS' defaults, then ``.arcs.yml`` ``budget``, then the request (``budget_usd``,
  ``iterations``); finally the USD dimension is lowered to ``usd_cap``, what the owner's monthly
  budget granted (the loop's LLM guard then keeps the spend within it).
- Interrupt: the request's (pause, ``/arcs stop``) is handed to the loop.
- Toolchains: with bubblewrap, the worker's own Python environment is exposed read-only in the
  sandbox (as ``arcs fix`` does), so a Python repository's tests run with the worker's
  interpreter; with docker, the runner image brings its own.
- Runner errors: a runner that cannot start (no container engine, bubblewrap missing) raises
  :class:`runners.sandbox.SandboxUnavailable` with one line; the pipeline ends the attempt as
  ``error`` with that reason.
- Files: the fix is applied to the (throw-away) checkout, and the new text of every touched file
  is read back: that is what the pipeline pushes.

The trace's Markdown (:func:`jobs.repair.trace.render_markdown`), the tests before/after and the
gates go into :attr:`RepairOutcome.trace_summary` (stored with the attempt) so that publishing,
which runs later and possibly elsewhere, can build the pull request body from the store alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from bot.errors import ConfigError
from bot.settings import Settings
from jobs.ports import RepairOutcome, RepairRequest

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from bot.github.repo_config import ArcsConfig
    from jobs.fix import FixReport, FixRequest
    from jobs.repair.budget import Budget
    from jobs.repair.llm import LLM
    from jobs.repair.ports import Clock
    from jobs.repair.tiers import TierRequest
    from jobs.repair.workbench import TestOutcome
    from runners.base import Runner

log = structlog.get_logger("arcs.repair_service")

Fixer = Callable[..., "FixReport"]
"""The signature of :func:`jobs.fix.fix` (replaced in tests)."""

MAX_FAILURE_LOG_CHARS = 4000
"""How much of the CI log's error lines goes into the outcome (and the PR body)."""


def worker_toolchains(prefix: str = sys.prefix, base_prefix: str = sys.base_prefix) -> tuple[Path, ...]:
    """The worker's own Python environment (a virtual environment), to expose in the sandbox."""
    from bot.cli.test_cmd import toolchain_paths

    # environ={}: library code does not read the environment; the interpreter's prefix suffices.
    return tuple(toolchain_paths(prefix=prefix, base_prefix=base_prefix, environ={}))


def _read_arcs_config(workdir: Path) -> ArcsConfig:
    from bot.github.repo_config import ArcsConfig, load_arcs_config

    def read(path: str) -> str | None:
        target = workdir / path
        try:
            return target.read_text(encoding="utf-8") if target.is_file() else None
        except (OSError, UnicodeDecodeError):
            return None

    try:
        return load_arcs_config(read)
    except ConfigError as exc:
        # The pipeline already validated .arcs.yml through the gateway; a file it accepted but
        # this reader rejects must not stop the repair: the defaults apply, and the log says so.
        log.warning("repair.config_ignored", error=str(exc)[:300])
        return ArcsConfig()


def _tests_json(outcome: TestOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {
        "passed": len(outcome.passed),
        "failed": len(outcome.failed),
        "errors": len(outcome.errors),
        "failing": [*outcome.failed, *outcome.errors][:50],
    }


@dataclass
class FixRepairService:
    """:class:`jobs.ports.RepairService` on top of :func:`jobs.fix.fix` (see the module docstring).

    ``runner``/``llm``/``clock``/``fixer`` replace the real ports in tests.
    """

    settings: Settings
    runner: Runner | None = None
    llm: LLM | None = None
    clock: Clock | None = None
    toolchains: tuple[Path, ...] | None = None
    """None: :func:`worker_toolchains`."""
    unsafe_no_sandbox: bool = False
    use_index: bool = True
    parallel: int | None = None
    fixer: Fixer | None = None

    @property
    def has_llm(self) -> bool:
        """A model is available (an injected one, or an Anthropic key in the settings)."""
        return self.llm is not None or self.settings.anthropic_api_key is not None

    def tier_for(self, request: RepairRequest, config: ArcsConfig) -> TierRequest:
        """The request's tier, else ``.arcs.yml``'s; ``0`` without a model."""
        from jobs.repair.tiers import parse_tier

        if not self.has_llm:
            return "0"
        wanted = (request.tier or "auto").strip() or "auto"
        try:
            tier = parse_tier(wanted)
        except ValueError as exc:
            raise ConfigError(f"repair: {exc}") from None
        return config.tier if tier == "auto" else tier

    def budget_for(self, request: RepairRequest, config: ArcsConfig) -> Budget:
        """ARCS' default budget, ``.arcs.yml``'s overrides, the request's, then ``usd_cap``."""
        budget = self.own_budget(request, config)
        if request.usd_cap is not None and request.usd_cap < budget.usd:
            return budget.with_(usd=max(0.0, float(request.usd_cap)))
        return budget

    def own_budget(self, request: RepairRequest, config: ArcsConfig) -> Budget:
        """ARCS' default budget, ``.arcs.yml``'s overrides, then the request's (no policy cap)."""
        from jobs.repair.budget import Budget

        budget = config.budget.apply(Budget())
        changes: dict[str, float] = {}
        if request.budget_usd is not None:
            changes["usd"] = float(request.budget_usd)
        if request.iterations is not None:
            changes["iterations"] = int(request.iterations)
        try:
            return budget.with_(**changes) if changes else budget
        except ValueError as exc:
            raise ConfigError(f"repair: {exc}") from None

    def fix_request(self, request: RepairRequest) -> FixRequest:
        """The :class:`jobs.fix.FixRequest` for ``request`` (tier, budget, sandbox, traces)."""
        from bot.cli.fix_cmd import default_jobs, llm_config
        from jobs.fix import FixRequest
        from jobs.repair.loop import LoopConfig

        config = _read_arcs_config(request.workdir)
        issue_text = None
        if request.kind == "issue":
            title = (request.issue_title or "").strip() or "Untitled issue"
            issue_text = f"{title}\n\n{request.issue_body or ''}"
            if request.instructions:
                issue_text += f"\n\nReviewer instructions:\n{request.instructions}"
        return FixRequest(
            repo=request.workdir,
            # .arcs.yml `test:` wins over the command the CI log shows (fix() reads .arcs.yml).
            test_command=None if config.test else request.test_command,
            issue_text=issue_text,
            tier=self.tier_for(request, config),
            budget=self.budget_for(request, config),
            apply=True,  # the checkout is thrown away; applying lets us read the new files back
            trace_out=request.trace_dir / f"attempt-{request.attempt_id}.json",
            traces_dir=request.trace_dir,
            llm=llm_config(self.settings),
            config=LoopConfig(parallel=self.parallel or default_jobs()),
            unsafe_no_sandbox=self.unsafe_no_sandbox,
            toolchain_paths=self.toolchains if self.toolchains is not None else worker_toolchains(),
            use_index=self.use_index,
            failure_class=request.failure_class or "",
            ci_tests=request.test_ids,
            hints=request.locations,
            apply_partial=config.open_pr_on_partial,
        )

    def run(self, request: RepairRequest) -> RepairOutcome:
        """Repair ``request.workdir``; the loop's own failures are data in the outcome."""
        from jobs.fix import fix

        fixer: Fixer = self.fixer or fix
        fix_request = self.fix_request(request)
        own_usd = self.own_budget(request, _read_arcs_config(request.workdir)).usd
        log.info(
            "repair.start",
            kind=request.kind,
            tier=fix_request.tier,
            targets=len(request.test_ids),
            failure_class=request.failure_class,
            usd=fix_request.budget.usd,
        )
        report = fixer(
            self.settings,
            fix_request,
            runner=self.runner,
            llm=self.llm,
            clock=self.clock,
            progress=lambda message: log.info("repair.progress", message=message[:300]),
            interrupt=request.interrupt,
        )
        outcome = outcome_from_report(report, request)
        outcome = replace(outcome, usd_capped=fix_request.budget.usd < own_usd)
        log.info("repair.done", verdict=outcome.verdict, fixed=outcome.fixed, files=len(outcome.files))
        return outcome


def changed_files(workdir: Path, paths: list[str]) -> dict[str, str | None]:
    """The text of each path under ``workdir`` after the fix (``None``: deleted)."""
    out: dict[str, str | None] = {}
    for rel in paths:
        target = workdir / rel
        out[rel] = target.read_text(encoding="utf-8") if target.is_file() else None
    return out


def outcome_from_report(report: FixReport, request: RepairRequest) -> RepairOutcome:
    """Map a :class:`jobs.fix.FixReport` onto the pipeline's :class:`RepairOutcome`."""
    from jobs.repair.trace import render_markdown

    result = report.result
    files: Mapping[str, str | None] = {}
    if (result.fixed or result.verdict == "partial") and report.applied:
        paths = list(dict.fromkeys(edit.path for edit in result.edits))
        files = changed_files(report.repo, paths)
    targets = list(result.trace.reproduction.targets) or list(request.test_ids)
    summary: dict[str, Any] = {
        "markdown": render_markdown(result.trace),
        "trace_id": result.trace.id,
        "tests_before": _tests_json(result.tests_before),
        "tests_after": _tests_json(result.tests_after),
        "gates": [{"gate": g.gate, "passed": g.passed, "detail": g.detail} for g in result.gates],
        "target_tests": targets[:50],
        "duration_s": round(result.spend.wall_s, 3),
        "executions": result.spend.executions,
        "candidates": result.candidates,
        "tiers": list(result.tiers),
        "notices": list(result.notices),
        "interrupt": dict(result.trace.interrupt) or None,
        "failure_class": request.failure_class,
        "failure_log": (request.failure_log or "")[:MAX_FAILURE_LOG_CHARS] or None,
        "verification": dict(result.verification) or None,
        "pre_existing": list(result.pre_existing),
        "commands": dict(result.trace.commands) or None,
    }
    return RepairOutcome(
        verdict=str(result.verdict),
        fixed=bool(result.fixed),
        reason=result.reason,
        patch=result.patch if result.fixed or result.verdict == "partial" else "",
        files=files,
        explanation=result.explanation,
        tier=result.tiers[-1] if result.tiers else result.trace.tier_requested,
        rounds=result.rounds,
        tokens=result.spend.tokens,
        cost_usd=float(result.spend.usd),
        trace_path=str(report.trace_path),
        trace_summary=summary,
        budget_usd=float(result.budget.usd),
        stopped_by=result.stopped_by,
    )


class RepoIndexService:
    """:class:`jobs.ports.IndexService` on :class:`indexing.index.RepoIndex` (under ``settings.home``).

    The index is keyed by the repository's ``owner/name`` (the checkout is a temporary folder).
    Refreshes are serialized twice:

    - within the process, all of them (a thread lock): the embedded Qdrant store admits one client
      per folder;
    - across processes and hosts, per repository (:func:`jobs.locks.repo_lock`): a PostgreSQL
      advisory lock when the store is PostgreSQL (on ``engine``, the store's, when given; else on
      an engine opened from ``ARCS_DATABASE_URL`` for each refresh), else a lock file beside the
      index manifest under ``ARCS_HOME``. Two workers sharing one Qdrant server therefore never
      rebuild the same collection at once; the second waits (at most ``lock_timeout_s``, then
      :class:`jobs.locks.LockTimeout`) and then refreshes incrementally on the first one's work.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        engine: Engine | None = None,
        lock_timeout_s: float | None = None,
    ) -> None:
        import threading

        from jobs.locks import DEFAULT_TIMEOUT_S

        self.settings = settings
        self.engine = engine
        self.lock_timeout_s = DEFAULT_TIMEOUT_S if lock_timeout_s is None else lock_timeout_s
        self._lock = threading.Lock()

    def refresh(self, repo: str, workdir: Path, *, full: bool) -> Mapping[str, Any]:
        """Index the checkout ``workdir`` of ``repo`` (incrementally unless ``full``)."""
        from indexing.index import RepoIndex
        from jobs.locks import repo_lock

        target: Settings | Engine = self.settings
        if self.engine is not None and self.engine.dialect.name == "postgresql":
            target = self.engine
        with (
            self._lock,
            repo_lock(target, repo, timeout_s=self.lock_timeout_s, lock_dir=self.settings.index_dir),
            RepoIndex.open(self.settings, workdir, repo_id=repo) as index,
        ):
            stats = index.refresh(full=full)
        return {
            "files": stats.files,
            "chunks": stats.chunks,
            "embedded": stats.embedded,
            "cached": stats.cached,
            "changed_files": stats.changed_files,
            "removed_files": stats.removed_files,
            "seconds": round(stats.seconds, 3),
            "commit": stats.commit,
            "full": stats.full,
        }


__all__ = [
    "FixRepairService",
    "RepoIndexService",
    "changed_files",
    "outcome_from_report",
    "worker_toolchains",
]
