"""The ``arcs fix`` / ``arcs replay`` use cases: wire the real ports around the repair loop for a
local repository.

:func:`fix`: resolve the test command (``--test``, ``.arcs.yml``, conventions), choose the
proposer (Anthropic when an API key is configured, else tier 0 templates), open and refresh the
index when a tier retrieves, run :class:`jobs.repair.loop.RepairLoop` (which reproduces first,
triages, repairs), write the trace to ``--trace-out`` or ``<traces_dir>/<id>.json``, and apply the
patch to the work tree only when asked.

:func:`replay`: re-run a trace's loop with its recorded LLM responses and recorded retrieval
(the frozen index snapshot) on the same base tree; report the first divergence, if any. A run that
an interrupt stopped (``/arcs stop``, an admin's pause) is replayed with an interrupt that stops
at the same check.

Nothing here reads the environment: settings and the LLM configuration are passed in.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bot.errors import ArcsError, ConfigError, UsageError
from bot.settings import Settings
from jobs.repair.budget import Budget
from jobs.repair.edits import EditError, apply_edits
from jobs.repair.llm import LLM
from jobs.repair.loop import LoopConfig, RepairLoop, RepairResult
from jobs.repair.ports import Clock, Interrupt, Proposer
from jobs.repair.proposers.replay import ReplayDivergence, ReplayLLM, load_records
from jobs.repair.task import RepairTask, sanitize_untrusted
from jobs.repair.tiers import TierRequest, TierUnavailable, resolve_tiers
from jobs.repair.trace import (
    Divergence,
    RecordedRetriever,
    ReplayMismatch,
    Trace,
    compare_outcomes,
    dump_trace,
    load_trace,
)
from jobs.sandbox_workbench import SandboxWorkbench, SystemClock
from runners.base import Runner
from runners.workspace import ephemeral_workspace

if TYPE_CHECKING:
    from indexing.retriever import Retriever

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_PARALLEL = 4
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """How to reach the model (read from the environment at the CLI edge)."""

    api_key: str | None = None
    model: str = DEFAULT_MODEL
    base_url: str | None = None

    @property
    def configured(self) -> bool:
        """An API key is set."""
        return bool(self.api_key)


@dataclass(frozen=True, slots=True)
class FixRequest:
    """One ``arcs fix`` invocation."""

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
    config: LoopConfig = field(default_factory=lambda: LoopConfig(parallel=DEFAULT_PARALLEL))
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


@dataclass(frozen=True, slots=True)
class FixReport:
    """What :func:`fix` did."""

    result: RepairResult
    trace_path: Path
    applied: bool
    repo: Path


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What :func:`replay` found."""

    recorded: Trace
    replayed: Trace | None
    divergence: Divergence | None

    @property
    def reproduced(self) -> bool:
        """The replay reproduced the recorded patch and verdict."""
        return self.divergence is None


def split_issue(text: str) -> tuple[str, str]:
    """``(title, body)`` of an issue file: the first non-empty line (``# `` stripped) and the rest."""
    lines = text.strip().splitlines()
    if not lines:
        raise UsageError("the issue file is empty")
    title = lines[0].lstrip("#").strip()
    return title, "\n".join(lines[1:]).strip()


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def _git_head(repo: Path) -> str:
    from indexing import gitutil

    try:
        return gitutil.head_commit(repo)
    except Exception:  # not a git work tree, or no commit yet
        return ""


def _make_runner(
    settings: Settings, unsafe: bool, toolchains: tuple[Path, ...], setup_allow: tuple[str, ...] = ()
) -> Runner:
    """The runner the settings choose (``ARCS_RUNNER``…); ``unsafe`` (``--unsafe-no-sandbox``) wins.

    ``setup_allow`` is the repository's ``.arcs.yml`` ``setup_network.allow``.
    """
    from runners.egress import EgressPolicy
    from runners.sandbox import make_runner

    return make_runner(
        unsafe_no_sandbox=unsafe,
        toolchain_paths=toolchains,
        kind=settings.runner,
        image=settings.runner_image,
        runtime=settings.runner_runtime,
        setup_network=EgressPolicy.build(settings.setup_network, settings.setup_network_allow, setup_allow),
    )


@contextlib.contextmanager
def _index(settings: Settings, repo: Path, notify: Progress) -> Iterator[tuple[Retriever | None, str]]:
    """Open and refresh the index; yields (retriever or None, snapshot id). Failures are notices."""
    from indexing.index import RepoIndex

    try:
        index = RepoIndex.open(settings, repo)
    except ArcsError as exc:
        notify(f"retrieval off: {exc.message}")
        yield None, ""
        return
    with index:
        try:
            stats = index.refresh()
            retriever = index.retriever()
        except ArcsError as exc:
            notify(f"retrieval off: {exc.message}")
            yield None, ""
            return
        snapshot = f"{stats.commit[:12]}:{settings.embedder}:{stats.files}f{stats.chunks}c"
        yield retriever, snapshot


def fix(
    settings: Settings,
    request: FixRequest,
    *,
    runner: Runner | None = None,
    llm: LLM | None = None,
    clock: Clock | None = None,
    progress: Progress | None = None,
    interrupt: Interrupt | None = None,
) -> FixReport:
    """Repair the repository at ``request.repo`` (see the module docstring).

    ``runner``/``llm``/``clock`` replace the real ports (tests); ``interrupt`` is asked before
    reproduction and before every round (the pipeline's pause and ``/arcs stop``). Raises :class:`UsageError` /
    :class:`ConfigError` (exit 2) for bad input; everything that happens during the repair is in
    the result and the trace.
    """
    from jobs.repair.proposers.anthropic import AnthropicProposer
    from jobs.repair.proposers.replay import RecordingLLM
    from jobs.repair.proposers.templates import TemplateProposer
    from runners.commands import resolve_test_command
    from runners.config import load_repo_config

    notify = progress or (lambda _message: None)
    repo = Path(request.repo).expanduser()
    if not repo.is_dir():
        raise UsageError(f"fix: {repo} is not a folder")
    repo = repo.resolve()
    repo_config = load_repo_config(repo)
    resolved = resolve_test_command(repo, explicit=request.test_command, config=repo_config)

    if llm is None and request.llm.configured and request.tier != "0":
        from jobs.repair.llm import AnthropicLLM

        assert request.llm.api_key is not None
        llm = AnthropicLLM(request.llm.api_key, request.llm.model, base_url=request.llm.base_url)
    if request.tier == "0":
        llm = None
    try:
        tiers = resolve_tiers(request.tier, has_llm=llm is not None)
    except TierUnavailable as exc:
        raise ConfigError(f"fix: {exc}") from None
    recording = RecordingLLM(llm) if llm is not None else None
    proposer: Proposer = AnthropicProposer(recording) if recording is not None else TemplateProposer()
    config = request.config
    if repo_config.timeout_s is not None:
        config = _with(config, test_timeout_s=repo_config.timeout_s)

    task = (
        RepairTask.issue(*split_issue(sanitize_untrusted(request.issue_text)), test_command=resolved.command)
        if request.issue_text is not None
        else RepairTask(
            kind="ci",
            test_command=resolved.command,
            failure_class=request.failure_class,
            ci_tests=request.ci_tests,
            hints=request.hints,
        )
    )
    toolchains = (*request.toolchain_paths, *repo_toolchains(repo))
    runner = runner or _make_runner(settings, request.unsafe_no_sandbox, toolchains, repo_config.setup_allow)
    toolchain = describe_toolchain(runner, toolchains, repo, image=settings.runner_image)
    notify(f"toolchain: {toolchain}")
    wants_index = request.use_index and any(t.k > 0 for t in tiers.tiers)
    notices: list[str] = []

    def note(message: str) -> None:
        notices.append(message)
        notify(message)

    with contextlib.ExitStack() as stack:
        workbench = stack.enter_context(
            SandboxWorkbench(
                repo,
                resolved,
                runner,
                memory_mb=repo_config.memory_mb or 2048,
                exclude=settings.exclude,
                toolchain=toolchain,
            )
        )
        retriever: Retriever | None = None
        snapshot = ""
        if wants_index:
            notify("indexing the repository for retrieval ...")
            retriever, snapshot = stack.enter_context(_index(settings, repo, note))
        loop = RepairLoop(
            retriever,
            proposer,
            workbench,
            clock or SystemClock(),
            llm=recording,
            config=config,
            interrupt=interrupt,
        )
        notify(f"reproducing: {resolved.command}")
        result = loop.run(task, request.budget, request.tier)
        trace = result.trace
        trace.id = trace.id or f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
        trace.created = _now()
        trace.notices.extend(notices)
        trace.index_snapshot = snapshot
        trace.repo = {
            "path": str(repo),
            "commit": _git_head(repo),
            "source_digest": workbench.source().digest(),
            "test_command": resolved.command,
            "framework": resolved.framework or "",
            "runner": getattr(runner, "name", ""),
        }
        trace.llm_calls = [r.to_json() for r in recording.records] if recording is not None else []

    will_apply = request.apply and (result.fixed or (request.apply_partial and result.verdict == "partial"))
    if will_apply:
        # The work tree is about to change: keep the base text of the touched files so that
        # `arcs replay` can rebuild the tree the run started from.
        trace.repo["applied_base"] = {e.path: _read_or_none(repo / e.path) for e in result.edits}
    trace_path = request.trace_out or (request.traces_dir or settings.home / "traces") / f"{trace.id}.json"
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
    return FixReport(result=result, trace_path=trace_path, applied=applied, repo=repo)


def repo_toolchains(repo: Path) -> tuple[Path, ...]:
    """The repository's own Python environment, when it has an obvious one (``.venv/`` or
    ``venv/`` with a ``bin/python``): exposed read-only in the sandbox, its ``bin`` first on PATH."""
    for name in (".venv", "venv"):
        env = repo / name
        if (env / "bin" / "python").exists() and (env / "pyvenv.cfg").is_file():
            return (env.absolute(),)
    return ()


def describe_toolchain(
    runner: object, toolchains: tuple[Path, ...], repo: Path, *, image: str | None = None
) -> str:
    """One line naming the toolchain the sandbox uses (printed and recorded in the trace)."""
    import sys

    name = str(getattr(runner, "name", "") or type(runner).__name__)
    if name == "docker":
        return f"docker: the runner image {image or '?'}"
    parts = [
        f"{path} (the repository's own environment)" if path.is_relative_to(repo) else str(path)
        for path in toolchains
    ]
    parts.append(f"python {sys.version_info.major}.{sys.version_info.minor} ({sys.base_prefix})")
    if (repo / "node_modules" / ".bin").is_dir():
        parts.append("node_modules/.bin")
    return f"{name}: " + ", ".join(parts)


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _with(config: LoopConfig, **changes: object) -> LoopConfig:
    from dataclasses import replace

    return replace(config, **changes)  # type: ignore[arg-type]


def replay(
    settings: Settings,
    trace_path: Path,
    *,
    repo: Path | None = None,
    runner: Runner | None = None,
    clock: Clock | None = None,
    unsafe_no_sandbox: bool = False,
    toolchain_paths: tuple[Path, ...] = (),
    progress: Progress | None = None,
) -> ReplayReport:
    """Re-run the loop recorded in ``trace_path`` with its recorded model responses and retrieval
    on the same base tree, and compare (see :func:`jobs.repair.trace.compare_outcomes`)."""
    from jobs.repair.proposers.anthropic import AnthropicProposer
    from jobs.repair.proposers.templates import TemplateProposer
    from runners.commands import resolve_test_command
    from runners.config import load_repo_config

    # The recorded run carries everything else; the settings choose the runner.
    notify = progress or (lambda _message: None)
    try:
        recorded = load_trace(Path(trace_path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"replay: cannot read {trace_path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise UsageError(f"replay: {trace_path}: {exc}") from exc
    if recorded.task is None:
        raise UsageError(f"replay: {trace_path} records no task")
    base = Path(repo or recorded.repo.get("path", "")).expanduser()
    if not str(base) or not base.is_dir():
        raise UsageError(f"replay: the recorded repository {base} is not a folder (pass --repo)")
    base = base.resolve()
    command = str(recorded.repo.get("test_command", "")) or None
    base_config = load_repo_config(base)
    resolved = resolve_test_command(base, explicit=command, config=base_config)
    records = load_records("".join(_jsonl(c) for c in recorded.llm_calls))
    replay_llm = ReplayLLM(records, model=recorded.model or None) if recorded.model else None
    proposer: Proposer = AnthropicProposer(replay_llm) if replay_llm is not None else TemplateProposer()
    retriever = RecordedRetriever(recorded) if recorded.index_snapshot else None
    config = LoopConfig.from_json(recorded.config)
    runner = runner or _make_runner(settings, unsafe_no_sandbox, toolchain_paths, base_config.setup_allow)
    with contextlib.ExitStack() as stack:
        workbench = stack.enter_context(SandboxWorkbench(base, resolved, runner))
        digest = workbench.source().digest()
        want = str(recorded.repo.get("source_digest", ""))
        applied_base = recorded.repo.get("applied_base")
        if want and digest != want and isinstance(applied_base, dict):
            # The patch was applied after the run: replay on a copy with the base text restored.
            copy = stack.enter_context(ephemeral_workspace(base))
            _restore_base(copy, applied_base)
            workbench = stack.enter_context(SandboxWorkbench(copy, resolved, runner))
            digest = workbench.source().digest()
        if want and digest != want:
            return ReplayReport(recorded, None, Divergence("source", "tree digest", want[:16], digest[:16]))
        loop = RepairLoop(
            retriever,
            proposer,
            workbench,
            clock or SystemClock(),
            llm=replay_llm,
            config=config,
            interrupt=RecordedInterrupt.of(recorded),
        )
        notify(f"replaying {recorded.id or trace_path} ({len(records)} recorded model calls)")
        try:
            result = loop.run(recorded.task, recorded.budget, _tier(recorded.tier_requested))
        except ReplayDivergence as exc:
            where = f"model call {exc.call_index + 1}" + (f" ({exc.purpose})" if exc.purpose else "")
            return ReplayReport(
                recorded,
                None,
                Divergence(where, "request", exc.expected_fingerprint[:16], exc.got_fingerprint[:16]),
            )
        except ReplayMismatch as exc:
            return ReplayReport(recorded, None, Divergence("retrieval", "query", "", str(exc)))
    replayed = result.trace
    divergence = compare_outcomes(recorded, replayed)
    if divergence is None and replay_llm is not None and not replay_llm.exhausted:
        divergence = Divergence("model calls", "count", str(len(records)), str(replay_llm.position))
    return ReplayReport(recorded, replayed, divergence)


class RecordedInterrupt:
    """Replays a recorded interrupt: answers the recorded reason at the recorded check."""

    def __init__(self, at: int, reason: str) -> None:
        self.at = at
        self.reason = reason
        self.checks = 0

    @classmethod
    def of(cls, trace: Trace) -> RecordedInterrupt | None:
        """The interrupt of ``trace`` (None when nothing interrupted it)."""
        record = trace.interrupt
        if not record:
            return None
        return cls(int(record.get("check") or 1), str(record.get("reason") or "interrupted"))

    def check(self) -> str | None:
        """The recorded reason from the recorded check on."""
        self.checks += 1
        return self.reason if self.checks >= self.at else None


def _restore_base(root: Path, files: dict[str, object]) -> None:
    """Write the recorded base text of each touched file into ``root`` (None: the file did not exist)."""
    top = root.resolve()
    for rel, text in files.items():
        target = (root / str(rel)).resolve()
        if not target.is_relative_to(top):
            raise UsageError(f"replay: recorded path {rel!r} escapes the repository")
        if text is None:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(str(text), encoding="utf-8")


def _tier(name: str) -> TierRequest:
    from jobs.repair.tiers import parse_tier

    try:
        return parse_tier(name or "auto")
    except ValueError as exc:
        raise UsageError(f"replay: {exc}") from None


def _jsonl(record: object) -> str:
    import json

    return json.dumps(record, sort_keys=True) + "\n"


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
    "replay",
    "repo_toolchains",
    "split_issue",
]
