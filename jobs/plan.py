"""One repair, resolved once: :class:`RepairPlan` (pure, frozen) and the rules that build it.

Nothing here reads a file, the environment or the network: the caller passes the
``.arcs.yml`` it already read (once per repair), the facts it gathered (:class:`RepairRequest`:
the message, the CI log, the command) and the deployment's defaults (:class:`PlanDefaults`), and
gets a plan back. The worker builds one with :func:`plan_for` (:mod:`jobs.attempt`), ``arcs fix``
with :func:`for_cli`; :func:`jobs.engine.run` runs a plan and returns a
:class:`jobs.repair.report.RepairReport`. The owner's budget reservation
(:mod:`jobs.admission`) and the loop's budget use the same :func:`own_budget`, from the same read.

The plan carries plain values only: the model's name and address (never its key), the index's
``owner/name`` and commit (never a client), the runner part of ``.arcs.yml`` as
:class:`runners.config.RepoConfig`. The test command is the explicit one (the CI step's, unless
``.arcs.yml`` has ``test:``); the engine resolves the rest (``.arcs.yml``, then the checkout's
conventions, which need the files).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from jobs.config import PathsConfig, dependency_updates_of, paths_of
from jobs.repair.budget import Budget
from jobs.repair.changes import ChangeSet
from jobs.repair.loop_config import GateConfig, LoopConfig
from jobs.repair.report import MAX_FAILURE_LOG_CHARS
from jobs.repair.tiers import TierRequest, parse_tier
from runners.config import RepoConfig
from runners.errors import ConfigError

if TYPE_CHECKING:
    from jobs.config import ArcsConfig

__all__ = [
    "IndexRef",
    "LLMRef",
    "PlanDefaults",
    "RepairPlan",
    "RepairRequest",
    "capped_budget",
    "for_cli",
    "on_no_fix_for",
    "own_budget",
    "plan_for",
    "tier_for",
]


# --- the rules -------------------------------------------------------------------------------


def own_budget(config: ArcsConfig, *, budget_usd: float | None, iterations: int | None) -> Budget:
    """ARCS' default budget, ``.arcs.yml``'s overrides, then the request's (no policy cap).

    Raises :class:`ConfigError` when the result is not a valid budget (a negative value).
    """
    budget = config.budget.apply(Budget())
    changes: dict[str, float] = {}
    if budget_usd is not None:
        changes["usd"] = float(budget_usd)
    if iterations is not None:
        changes["iterations"] = int(iterations)
    try:
        return budget.with_(**changes) if changes else budget
    except ValueError as exc:
        raise ConfigError(f"repair: {exc}") from None


def capped_budget(own: Budget, usd_cap: float | None) -> Budget:
    """``own`` with its USD dimension lowered to ``usd_cap`` (what the owner's budget granted)."""
    if usd_cap is not None and usd_cap < own.usd:
        return own.with_(usd=max(0.0, float(usd_cap)))
    return own


def tier_for(requested: str | None, config: ArcsConfig, *, has_llm: bool) -> TierRequest:
    """The requested tier, else ``.arcs.yml``'s (for ``auto``); ``0`` without a model."""
    if not has_llm:
        return "0"
    wanted = (requested or "auto").strip() or "auto"
    try:
        tier = parse_tier(wanted)
    except ValueError as exc:
        raise ConfigError(f"repair: {exc}") from None
    return config.tier if tier == "auto" else tier


# --- the values ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LLMRef:
    """Which model to call (the key stays with the caller's ports, never in a plan)."""

    model: str
    base_url: str | None = None


@dataclass(frozen=True, slots=True)
class IndexRef:
    """Which index retrieval reads."""

    repo_id: str | None = None
    """``owner/name`` (the worker: the index ``refresh_index`` maintains); None: the folder's own
    local index (``arcs fix`` on a local folder only)."""
    commit: str | None = None
    """The commit the index is refreshed to (the attempt's ``head_sha``)."""


@dataclass(frozen=True, slots=True)
class PlanDefaults:
    """What the deployment decides for every repair (from the settings, at the edge)."""

    llm: LLMRef | None = None
    """None: no model is configured, every repair is tier 0."""
    parallel: int = 1
    """Candidates tested concurrently."""
    toolchains: tuple[Path, ...] = ()
    """Folders exposed read-only in the sandbox (the worker's own Python environment)."""
    unsafe_no_sandbox: bool = False
    use_index: bool = True


@dataclass(frozen=True, slots=True)
class RepairRequest:
    """What the attempt knows about one repair: the checkout and what to fix in it (the message,
    the CI log analysis, the command). :func:`plan_for` turns it into a :class:`RepairPlan`."""

    kind: Literal["ci", "issue"]
    repo: str
    workdir: Path
    """The checkout at ``head_sha``; the engine may change it (the worker throws it away)."""
    head_sha: str
    attempt_id: int
    trace_dir: Path
    trigger: str = ""
    """``ci``, ``issue`` or ``comment`` (recorded with the plan)."""
    failure_class: str | None = None
    failure_log: str | None = None
    """Error lines of the failed CI step (kept with the report; sanitized before a model sees them)."""
    test_ids: tuple[str, ...] = ()
    """Failing tests named by the CI log (preferred targets when they fail in the sandbox too)."""
    locations: tuple[tuple[str, int], ...] = ()
    """``(path, line)`` the CI log points at (retrieval hints for the loop)."""
    test_command: str | None = None
    """The failing CI step's command, when the log shows it (``.arcs.yml`` still wins)."""
    issue_title: str | None = None
    issue_body: str | None = None
    instructions: str | None = None
    """Reviewer feedback for ``/arcs revise`` (untrusted text)."""
    tier: str = "auto"
    budget_usd: float | None = None
    iterations: int | None = None
    usd_cap: float | None = None
    """What the owner's monthly budget granted this attempt (reserved in the store)."""
    changes: ChangeSet | None = None
    """The change from the last green commit to ``head_sha``, when known (issue #14)."""
    change_note: str = ""
    """Where :attr:`changes` came from, or why there is none (a line of the trace)."""
    on_default_branch: bool = False
    """The red commit is the head of the default branch, not of a pull request (a revert of the
    culprit may then be offered: ``.arcs.yml`` ``on_no_fix: revert``)."""


@dataclass(frozen=True, slots=True)
class RepairPlan:
    """One repair, resolved: what :func:`jobs.engine.run` runs (built once, never changed)."""

    workdir: Path
    """The tree to repair (the worker's checkout, the CLI's folder)."""
    repo: str = ""
    """``owner/name`` in the worker; the folder for ``arcs fix``."""
    head_sha: str = ""
    attempt_id: int | None = None
    kind: Literal["ci", "issue"] = "ci"
    trigger: str = ""
    # -- the loop's inputs --
    issue_text: str | None = None
    """An issue: first line the title, the rest the body (untrusted; sanitized by the engine)."""
    failure_class: str = ""
    ci_tests: tuple[str, ...] = ()
    hints: tuple[tuple[str, int], ...] = ()
    failure_log: str = ""
    """The start of the CI failure log (kept with the report, at most 4,000 characters)."""
    instructions: str = ""
    """Reviewer feedback (``/arcs revise``); an issue's text carries it to the loop."""
    changes: ChangeSet | None = None
    """Last green -> red (``arcs fix --since``): tier 0 offers reverts of its hunks and commits, and
    autofix limits a formatter's fix to its files first. None: unknown."""
    change_note: str = ""
    """Where :attr:`changes` came from, or why there is none (a line of the trace)."""
    on_no_fix: Literal["report", "revert"] = "report"
    """``revert``: when no forward fix passes, revert the culprit commit if its revert passes the
    final verification. Only ever ``revert`` on the default branch (``.arcs.yml`` ``on_no_fix``)."""
    revert_skipped: str = ""
    """``.arcs.yml`` asks for ``revert`` but this run may not (not the default branch): why."""
    dependency_updates: Literal["fix", "comment", "off"] = "fix"
    """``.arcs.yml`` ``dependency_updates``: what a bump in :attr:`changes` gets (#27)."""
    test_command: str | None = None
    """The explicit test command (``--test``, the CI step's); None: ``.arcs.yml``, conventions."""
    budget: Budget = field(default_factory=Budget)
    """The loop's bounds: :attr:`budget_own` lowered to what the owner's budget granted."""
    budget_own: Budget = field(default_factory=Budget)
    """Defaults <- ``.arcs.yml`` <- the request (what the reservation asks for)."""
    tier: TierRequest = "auto"
    loop: LoopConfig = field(default_factory=LoopConfig)
    """With ``.arcs.yml`` ``timeout_s`` as the test timeout and the deployment's parallelism."""
    # -- the runner's inputs --
    repo_config: RepoConfig = field(default_factory=RepoConfig)
    """The runner part of ``.arcs.yml`` (test, setup, timeout, memory, setup network)."""
    toolchains: tuple[Path, ...] = ()
    unsafe_no_sandbox: bool = False
    # -- the other ports' inputs --
    index: IndexRef | None = None
    """None: no retrieval (tier 0, ``--no-index``)."""
    llm: LLMRef | None = None
    # -- what happens after --
    apply: bool = False
    """Write the patch to :attr:`workdir` (the worker: always, to read the files back)."""
    apply_partial: bool = False
    """With ``apply``: a ``partial`` patch too (``.arcs.yml`` ``open_pr_on_partial``)."""
    trace_out: Path | None = None
    traces_dir: Path | None = None
    """Where the trace goes without ``trace_out`` (None: the engine's default)."""
    config_source: str = "defaults"
    """``.arcs.yml@<sha>`` (the file the plan was built from) or ``defaults``."""

    @property
    def usd_capped(self) -> bool:
        """The owner's monthly budget lowered the attempt's own USD budget."""
        return self.budget.usd < self.budget_own.usd

    @property
    def budget_own_usd(self) -> float:
        """The attempt's own USD budget, before the owner's cap."""
        return self.budget_own.usd


# --- the builders ----------------------------------------------------------------------------


def _loop(parallel: int, runner: RepoConfig, paths: PathsConfig) -> LoopConfig:
    loop = LoopConfig(parallel=max(1, parallel))
    loop = replace(loop, gates=gates_for(paths, loop.gates))
    return replace(loop, test_timeout_s=runner.timeout_s) if runner.timeout_s is not None else loop


def gates_for(paths: PathsConfig, base: GateConfig) -> GateConfig:
    """``base`` with ``.arcs.yml`` ``paths:`` applied: its ``denied`` globs are added to the
    gates' own (never replace them), a non-empty ``allowed`` list limits every patch to it."""
    denied = tuple(dict.fromkeys((*base.denied, *paths.denied)))
    return replace(base, denied=denied, allowed=paths.allowed or base.allowed)


def on_no_fix_for(request: RepairRequest, config: ArcsConfig) -> Literal["report", "revert"]:
    """``.arcs.yml`` ``on_no_fix``, but ``revert`` only for a CI failure on the default branch
    (never on a pull request's branch: ARCS does not undo someone else's work there)."""
    wanted = getattr(config, "on_no_fix", "report")
    return "revert" if wanted == "revert" and request.kind == "ci" and request.on_default_branch else "report"


def _revert_refused(request: RepairRequest, config: ArcsConfig) -> str:
    """Why a CI repair that ``.arcs.yml`` wants reverted may not be ('' when it may, or is not asked)."""
    if (
        request.kind != "ci"
        or getattr(config, "on_no_fix", "report") != "revert"
        or request.on_default_branch
    ):
        return ""
    return "not the default branch (ARCS never reverts on a pull request's or another branch)"


def plan_for(request: RepairRequest, config: ArcsConfig, defaults: PlanDefaults) -> RepairPlan:
    """The worker's plan: ``request`` under ``config`` (``.arcs.yml``, read once) and ``defaults``.

    Tier: the request's, else ``.arcs.yml``'s; ``0`` without a model. Budget: ARCS' defaults,
    ``.arcs.yml``, the request's, then lowered to ``usd_cap``. ``.arcs.yml`` ``test:`` wins over
    the command the CI log shows. The patch is applied (the checkout is thrown away; the engine
    reads the files back). Raises :class:`ConfigError` for an invalid tier or budget.
    """
    tier = tier_for(request.tier, config, has_llm=defaults.llm is not None)
    own = own_budget(config, budget_usd=request.budget_usd, iterations=request.iterations)
    runner = config.repo_config()
    issue_text = None
    if request.kind == "issue":
        title = (request.issue_title or "").strip() or "Untitled issue"
        issue_text = f"{title}\n\n{request.issue_body or ''}"
        if request.instructions:
            issue_text += f"\n\nReviewer instructions:\n{request.instructions}"
    elif request.instructions:
        # `/arcs revise` on an ARCS pull request: the reviewer's words are the task (its head
        # passes CI, so a CI task would find nothing to do); the test command still guards it.
        issue_text = f"Revise this pull request as the reviewer asks\n\n{request.instructions}"
    use_index = defaults.use_index and tier != "0"
    return RepairPlan(
        workdir=request.workdir,
        repo=request.repo,
        head_sha=request.head_sha,
        attempt_id=request.attempt_id,
        kind=request.kind,
        trigger=request.trigger or request.kind,
        issue_text=issue_text,
        failure_class=request.failure_class or "",
        ci_tests=request.test_ids,
        hints=request.locations,
        failure_log=(request.failure_log or "")[:MAX_FAILURE_LOG_CHARS],
        instructions=request.instructions or "",
        changes=request.changes,
        change_note=request.change_note,
        on_no_fix=on_no_fix_for(request, config),
        revert_skipped=_revert_refused(request, config),
        dependency_updates=config.dependency_updates,
        test_command=None if config.test else request.test_command,
        budget=capped_budget(own, request.usd_cap),
        budget_own=own,
        tier=tier,
        loop=_loop(defaults.parallel, runner, config.paths),
        repo_config=runner,
        toolchains=defaults.toolchains,
        unsafe_no_sandbox=defaults.unsafe_no_sandbox,
        index=IndexRef(request.repo, request.head_sha) if use_index else None,
        llm=defaults.llm,
        apply=True,
        apply_partial=config.open_pr_on_partial,
        trace_out=request.trace_dir / f"attempt-{request.attempt_id}.json",
        traces_dir=request.trace_dir,
        config_source=f"{config.path}@{request.head_sha}" if config.path else "defaults",
    )


def for_cli(
    workdir: Path,
    *,
    repo_config: RepoConfig,
    test_command: str | None = None,
    issue_text: str | None = None,
    tier: TierRequest = "auto",
    budget: Budget | None = None,
    loop: LoopConfig | None = None,
    llm: LLMRef | None = None,
    toolchains: tuple[Path, ...] = (),
    unsafe_no_sandbox: bool = False,
    use_index: bool = True,
    apply: bool = False,
    apply_partial: bool = False,
    trace_out: Path | None = None,
    traces_dir: Path | None = None,
    failure_class: str = "",
    ci_tests: tuple[str, ...] = (),
    hints: tuple[tuple[str, int], ...] = (),
    changes: ChangeSet | None = None,
) -> RepairPlan:
    """``arcs fix``'s plan (also the Action's, the demo's, the benches'): a local folder, the
    flags as given, the folder's own ``.arcs.yml`` runner part (``repo_config``; its ``paths`` and
    ``dependency_updates`` keys too), its local index.

    The tier is taken as asked (the engine refuses a model tier without a model); ``loop``'s test
    timeout becomes ``.arcs.yml`` ``timeout_s`` when that is set.
    """
    base = loop if loop is not None else LoopConfig()
    base = replace(base, gates=gates_for(paths_of(repo_config), base.gates))
    if repo_config.timeout_s is not None:
        base = replace(base, test_timeout_s=repo_config.timeout_s)
    own = budget if budget is not None else Budget()
    path = repo_config.path
    return RepairPlan(
        workdir=workdir,
        repo=str(workdir),
        kind="issue" if issue_text is not None else "ci",
        trigger="cli",
        issue_text=issue_text,
        failure_class=failure_class,
        ci_tests=ci_tests,
        hints=hints,
        changes=changes,
        dependency_updates=dependency_updates_of(repo_config),
        test_command=test_command,
        budget=own,
        budget_own=own,
        tier=tier,
        loop=base,
        repo_config=repo_config,
        toolchains=toolchains,
        unsafe_no_sandbox=unsafe_no_sandbox,
        index=IndexRef() if use_index and tier != "0" else None,
        llm=llm,
        apply=apply,
        apply_partial=apply_partial,
        trace_out=trace_out,
        traces_dir=traces_dir,
        config_source=str(path) if path is not None else "defaults",
    )
