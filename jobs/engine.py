"""The repair engine: run one :class:`jobs.plan.RepairPlan` and return a
:class:`jobs.repair.report.RepairReport` (``arcs fix``, the worker, the Action).

:func:`run` (= :func:`execute` + :func:`report_of`) resolves the test command (the plan's explicit
one, ``.arcs.yml``'s, then the checkout's conventions), picks the proposer (Anthropic when the
plan names a model and the ports hold its key, else tier-0 templates), builds the runner, chooses
the index the plan names, hands them to :func:`jobs.build.build` (the one wiring of workbench,
change-first offers and loop, which ``arcs replay`` calls too), runs the repair, looks for the
culprit, writes the trace and applies the patch when the plan asks. :func:`report_of` is the one
report of a run (the worker, ``arcs fix`` and the Action render it).
The engine never reads ``.arcs.yml`` or the settings: the plan carries the repository's values,
:class:`EnginePorts` the deployment's (:class:`EngineConfig`, built at the edge) and the effects.

:class:`jobs.repair_service.FixRepairService` is the worker's :class:`jobs.ports.RepairService`
around :func:`run`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import stat
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import structlog

from indexing.config import IndexConfig
from jobs.build import RepairPorts, RepairSetup, Retrieval, build
from jobs.culprit import ChangeOutcome, after_loop
from jobs.dependency_changes import Fetch, distfetch_port
from jobs.dependency_stage import TRACE_KEY, prepare
from jobs.engine_ports import (
    IndexOpener,
    Progress,
    RunnerConfig,
    RunnerFactory,
    RunnerSettings,
    changed_files,
    describe_toolchain,
    local_index,
    make_runner,
)
from jobs.plan import RepairPlan
from jobs.repair.depupdate.record import DependencyUpdate
from jobs.repair.diffing import parse_patch
from jobs.repair.edits import EditError, apply_edits
from jobs.repair.llm import LLM
from jobs.repair.loop import RepairResult
from jobs.repair.meter import BudgetMeter
from jobs.repair.ports import Clock, Interrupt, Proposer
from jobs.repair.report import FailureSpot, RepairReport
from jobs.repair.task import RepairTask, sanitize_untrusted
from jobs.repair.tiers import TierUnavailable, resolve_tiers
from jobs.repair.trace import dump_trace
from jobs.sandbox_workbench import SystemClock
from jobs.test_history import HistoryStore, flake_rate
from jobs.wiring import DEFAULT_MODEL, DEFAULT_PARALLEL, default_parallel
from runners import wsfs
from runners.base import Runner
from runners.errors import ArcsError, ConfigError, UsageError
from runners.toolchains import detect_environment

if TYPE_CHECKING:
    from pydantic import SecretStr

    from indexing.retriever import Retriever

log = structlog.get_logger("arcs.engine")


# --- configuration and ports -------------------------------------------------------------------


class EngineSettings(RunnerSettings, Protocol):
    """The settings fields the engine and the worker's service read (``bot.settings.Settings``
    conforms; nothing here imports it)."""

    @property
    def home(self) -> Path: ...
    @property
    def anthropic_api_key(self) -> SecretStr | None: ...
    @property
    def anthropic_base_url(self) -> str | None: ...
    @property
    def model(self) -> str: ...
    @property
    def sqlalchemy_url(self) -> str: ...

    def index_config(self) -> IndexConfig:
        """The indexing configuration."""
        ...


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """What the engine needs from the deployment's settings."""

    index: IndexConfig
    runner: RunnerConfig = field(default_factory=RunnerConfig)
    traces_dir: Path | None = None
    """Where traces go when the plan names no folder (None: ``<index home>/traces``)."""
    cache_dir: Path | None = None
    """Where dependency distributions are unpacked (#27; None: ``<index home>/cache``)."""

    @classmethod
    def of(cls, settings: EngineSettings) -> EngineConfig:
        """From the settings."""
        return cls(
            index=settings.index_config(),
            runner=RunnerConfig.of(settings),
            traces_dir=settings.home / "traces",
            cache_dir=settings.home / "cache",
        )


@dataclass(frozen=True, slots=True)
class EnginePorts:
    """The deployment's configuration and the effects one repair runs with.

    ``runner``/``llm``/``clock`` replace the real ones (tests); ``interrupt`` is asked before
    reproduction and before every round (the worker's pause and ``/arcs stop``); ``index`` opens
    the index the plan names (None: a local folder's, :func:`jobs.engine_ports.local_index`).
    """

    config: EngineConfig
    api_key: str | None = field(default=None, repr=False)
    """The model's key (the plan names the model, never the key)."""
    runner: Runner | None = None
    runner_factory: RunnerFactory | None = None
    llm: LLM | None = None
    clock: Clock | None = None
    progress: Progress | None = None
    interrupt: Interrupt | None = None
    index: IndexOpener | None = None
    fetch: Fetch | None = None
    history: HistoryStore | None = None
    """The repository's test history (#26): the failing targets' flake rate for the culprit bisect."""
    """Unpacks a dependency's version (#27; None: download from the index into the cache)."""


@dataclass(frozen=True, slots=True)
class LoopRun:
    """What :func:`execute` did: the loop's own result (with its trace), where the trace went,
    whether the patch was applied to ``repo``."""

    result: RepairResult
    trace_path: Path
    applied: bool
    repo: Path
    change: ChangeOutcome = field(default_factory=ChangeOutcome)
    """The change since green (#14): its one-line range, the culprit, a verified revert."""
    plan: RepairPlan | None = None
    """The plan that ran (:func:`report_of` reads the CI context and the owner's cap from it)."""
    dependency: DependencyUpdate | None = None
    """The dependency update in the change (#27), for the report."""


def split_issue(text: str) -> tuple[str, str]:
    """``(title, body)`` of an issue file: the first non-empty line (``# `` stripped) and the rest."""
    lines = text.strip().splitlines()
    if not lines:
        raise UsageError("the issue file is empty")
    title = lines[0].lstrip("#").strip()
    return title, "\n".join(lines[1:]).strip()


# --- the use case --------------------------------------------------------------------------------


def run(plan: RepairPlan, ports: EnginePorts) -> RepairReport:
    """Run ``plan`` (see the module docstring) and report; the loop's failures are data in the
    report. Raises :class:`UsageError` / :class:`ConfigError` (exit 2) for bad input."""
    return report_of(execute(plan, ports), plan)


def report_of(done: LoopRun, plan: RepairPlan | None = None) -> RepairReport:
    """The :class:`RepairReport` of a run (the one report the worker, ``arcs fix`` and the Action
    render): the files of an applied fix (or partial fix) read back, the CI context and the
    owner's cap from ``plan`` (None: the plan the run recorded, :attr:`LoopRun.plan`)."""
    from jobs.repair.trace import render_markdown

    plan = plan or done.plan
    if plan is None:
        raise ValueError("report_of: the run records no plan")
    result = done.result
    files: dict[str, str | None] = {}
    if (result.fixed or result.verdict == "partial") and done.applied:
        files = changed_files(done.repo, list(dict.fromkeys(edit.path for edit in result.edits)))
    report = RepairReport.from_result(
        result,
        trace_path=str(done.trace_path),
        trace_markdown=render_markdown(result.trace),
        files=files,
        target_tests=plan.ci_tests,
        failure_class=plan.failure_class,
        failure_log=plan.failure_log,
        usd_capped=plan.usd_capped,
    )
    change = done.change
    return replace(
        report,
        failures=repository_spots(done.repo, report.failures, report.patch),
        changes=change.changes,
        culprit=change.culprit,
        revert=change.revert,
        on_no_fix="revert" if plan.revert_skipped else plan.on_no_fix,
        revert_skipped="" if result.fixed else (plan.revert_skipped or change.revert_skipped),
        dependency=done.dependency,
    )


def repository_spots(
    workdir: Path, spots: tuple[FailureSpot, ...], patch: str = ""
) -> tuple[FailureSpot, ...]:
    """The failure locations that name a regular file of the repository as committed: a path
    outside the checkout (a sandbox or host path), a link, or a file the patch creates (absent
    from the commit the check run is on) is dropped. Read through :mod:`runners.wsfs`."""
    created = {p.path for p in parse_patch(patch) if p.status == "added"} if patch else set()
    kept: list[FailureSpot] = []
    for spot in spots:
        if spot.path in created:
            continue
        try:
            found = wsfs.entry_stat(workdir, spot.path)
        except (OSError, ValueError):  # an absolute path, `..`, a link on the way
            continue
        if found is not None and stat.S_ISREG(found.st_mode):
            kept.append(spot)
    return tuple(kept)


def _home() -> Path | None:
    """The user's home folder (poetry's and hatch's environments live below it), if known."""
    try:
        return Path.home()
    except RuntimeError:
        return None


def execute(plan: RepairPlan, ports: EnginePorts) -> LoopRun:
    """Run ``plan``'s loop and keep its raw result (``arcs fix`` prints it, benches measure it)."""
    from jobs.repair.proposers.anthropic import AnthropicProposer
    from jobs.repair.proposers.replay import RecordingLLM
    from jobs.repair.tier0.templates import TemplateProposer
    from runners.commands import resolve_test_command

    config = ports.config
    notify = ports.progress or (lambda _message: None)
    repo = Path(plan.workdir).expanduser()
    if not repo.is_dir():
        raise UsageError(f"fix: {repo} is not a folder")
    repo = repo.resolve()
    repo_config = plan.repo_config
    resolved = resolve_test_command(repo, explicit=plan.test_command, config=repo_config)

    llm = ports.llm
    if llm is None and plan.llm is not None and ports.api_key and plan.tier != "0":
        from jobs.llm_anthropic import AnthropicLLM

        llm = AnthropicLLM(ports.api_key, plan.llm.model, base_url=plan.llm.base_url)
    if plan.tier == "0":
        llm = None
    try:
        tiers = resolve_tiers(plan.tier, has_llm=llm is not None)
    except TierUnavailable as exc:
        raise ConfigError(f"fix: {exc}") from None
    recording = RecordingLLM(llm) if llm is not None else None
    proposer: Proposer = AnthropicProposer(recording) if recording is not None else TemplateProposer()

    task = _task(plan, resolved.command)
    # The project's own environment (#23): its venv, editable installs and src layout.
    # A clone the App repairs is the attacker's: look in no home folder, expose nothing it names.
    trusted = plan.trigger == "cli"
    project = detect_environment(repo, plan.toolchains, home=_home() if trusted else None, trusted=trusted)
    toolchains = project.toolchains
    resolved = resolved.with_pythonpath(project.pythonpath)
    runner = ports.runner
    if runner is None:
        factory = ports.runner_factory or (lambda u, t, a: make_runner(config.runner, u, t, a))
        runner = factory(plan.unsafe_no_sandbox, toolchains, repo_config.setup_allow)
    toolchain = describe_toolchain(runner, toolchains, repo, image=config.runner.image)
    notify(f"toolchain: {toolchain}")
    if getattr(runner, "name", "") != "docker":
        notify(project.line)
    notices: list[str] = []

    def note(message: str) -> None:
        notices.append(message)
        notify(message)

    retrieval = _retrieval(plan, ports, repo, any(t.k > 0 for t in tiers.tiers), note, notify)
    # A dependency update (#27): both versions fetched on the host (unpacked, never built).
    cache = config.cache_dir or config.index.index_dir.parent / "cache"
    stage = prepare(plan.changes, repo, plan.dependency_updates, ports.fetch or distfetch_port(cache))
    setup = RepairSetup(
        repo=repo,
        command=resolved,
        budget=plan.budget,
        loop=plan.loop,
        changes=plan.changes,
        memory_mb=repo_config.memory_mb or 2048,
        exclude=tuple(config.index.exclude),
        toolchain=toolchain,
        dependencies=stage,
    )
    wired = RepairPorts(
        runner=runner,
        proposer=proposer,
        clock=ports.clock or SystemClock(),
        llm=recording,
        interrupt=ports.interrupt,
        retrieval=retrieval,
    )
    with build(setup, wired) as repair:
        workbench = repair.workbench
        notify(f"reproducing: {resolved.command}")
        first = repair.first

        def culprit(found: RepairResult, meter: BudgetMeter) -> ChangeOutcome:
            # The culprit (bisected on the failing targets) and the revert fallback, in the same
            # sandbox, on what the repair's meter has left.
            return after_loop(
                plan,
                found,
                workbench,
                repo,
                meter,
                early=first.early_found,
                flake_rate=flake_rate(ports.history, plan.repo, found.trace.reproduction.targets),
            )

        result, change = repair.run(task, plan.tier, culprit)
        trace = result.trace
        trace.id = trace.id or f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        trace.created = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
        trace.notices.extend(notices + (stage.notices() if stage is not None else []))
        changed = repair.first.notices(result, plan.changes)
        trace.notices.extend(changed)
        result = replace(result, notices=(*result.notices, *changed))
        trace.index_snapshot = repair.snapshot
        trace.repo = {
            "path": str(repo),
            "commit": _git_head(repo),
            "source_digest": workbench.source().digest(),
            "test_command": resolved.command,
            "framework": resolved.framework or "",
            "runner": getattr(runner, "name", ""),
            "toolchains": [str(path) for path in toolchains],  # `arcs replay` uses the same (#23)
        }
        trace.llm_calls = [r.to_json() for r in recording.records] if recording is not None else []
        trace.notices.extend(change.notices)
        if change.record:
            trace.repo["changes"] = dict(change.record)
        result = replace(result, notices=(*result.notices, *change.notices))
        dependency = None
        if stage is not None:  # replay reads the stage from here and fetches nothing
            trace.repo[TRACE_KEY] = stage.to_json()
            offers = repair.migrations.offers if repair.migrations is not None else ()
            dependency = stage.report(
                workbench.source(), fixed=result.fixed, edits=result.edits, offers=offers
            )

    will_apply = plan.apply and (result.fixed or (plan.apply_partial and result.verdict == "partial"))
    if will_apply:
        # The work tree is about to change: keep the base text of the touched files so that
        # `arcs replay` can rebuild the tree the run started from.
        trace.repo["applied_base"] = {e.path: wsfs.text_or_none(repo, e.path) for e in result.edits}
    traces_dir = plan.traces_dir or config.traces_dir or config.index.index_dir.parent / "traces"
    trace_path = plan.trace_out or traces_dir / f"{trace.id}.json"
    try:
        trace_path.parent.mkdir(parents=True, exist_ok=True)
        trace_path.write_text(dump_trace(trace), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"fix: cannot write the trace to {trace_path}: {exc.strerror or exc}") from exc

    applied = False
    if will_apply:
        try:
            apply_edits(repo, result.edits)
        except EditError as exc:
            raise ArcsError(
                f"fix: the patch no longer applies to the work tree ({exc}); it is in {trace_path}",
                exit_code=1,
            ) from exc
        applied = True
    return LoopRun(
        result=result,
        trace_path=trace_path,
        applied=applied,
        repo=repo,
        change=change,
        plan=plan,
        dependency=dependency,
    )


def _task(plan: RepairPlan, command: str) -> RepairTask:
    """The task of ``plan``: an issue (its title and body, fenced) or a CI failure."""
    if plan.issue_text is not None:
        return RepairTask.issue(*split_issue(sanitize_untrusted(plan.issue_text)), test_command=command)
    return RepairTask(
        kind="ci",
        test_command=command,
        failure_class=plan.failure_class,
        ci_tests=plan.ci_tests,
        hints=plan.hints,
        changes=plan.changes,
    )


def _retrieval(
    plan: RepairPlan, ports: EnginePorts, repo: Path, wanted: bool, note: Progress, notify: Progress
) -> Retrieval | None:
    """The retrieval :func:`jobs.build.build` opens: the index the plan names when a tier
    ``wanted`` it (its port, or a local folder's), said first; None: no retrieval."""
    if plan.index is None or not wanted:
        return None
    opener = ports.index
    if opener is None and plan.index.repo_id is None:
        opener = local_index(ports.config.index)
    if opener is None:  # a repository's index is only ever opened through its port
        note(f"retrieval off: no index port for {plan.index.repo_id}")
        return None
    index = opener

    def retrieval() -> contextlib.AbstractContextManager[tuple[Retriever | None, str]]:
        notify("indexing the repository for retrieval ...")
        return index(repo, note)

    return retrieval


def _git_head(repo: Path) -> str:
    from indexing import gitutil

    try:
        return gitutil.head_commit(repo)
    except Exception:  # not a git work tree, or no commit yet
        return ""


__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PARALLEL",
    "EngineConfig",
    "EnginePorts",
    "EngineSettings",
    "IndexOpener",
    "LoopRun",
    "Progress",
    "RunnerConfig",
    "default_parallel",
    "execute",
    "make_runner",
    "report_of",
    "run",
    "split_issue",
]
