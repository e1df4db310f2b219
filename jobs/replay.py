"""``arcs replay``: re-run a trace's loop with its recorded LLM responses and recorded retrieval
(the frozen index snapshot) on the same base tree; report the first divergence, if any.

The model's tool calls (``open``, ``search``, ``symbol``, ``run_tests``) are answered with the
recorded results, not re-executed; each call must be the recorded one (tool and input), and the
model requests after it carry the recorded result, so their fingerprints check the rest. The
failing tests' call path (the traced run, :mod:`jobs.repair.spectrum_context`) is the recorded
one too, its execution counted as recorded; a trace without one replays without one.

A run that an interrupt stopped (``/arcs stop``, an admin's pause) is replayed with an interrupt that
stops at the same check (:class:`RecordedInterrupt`). A run whose patch was applied afterwards is
replayed on a copy with the recorded base text restored (:func:`_restore_base`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path

from jobs.build import RepairPorts, RepairSetup, build
from jobs.dependency_stage import TRACE_KEY, DependencyStage
from jobs.engine import EngineSettings, Progress, RunnerConfig, make_runner
from jobs.repair.budget import Budget
from jobs.repair.loop import LoopConfig
from jobs.repair.ports import Clock
from jobs.repair.proposers.replay import ReplayDivergence, ReplayLLM, load_records
from jobs.repair.spectrum_context import RecordedSpectrum
from jobs.repair.tiers import TierRequest
from jobs.repair.tools_session import RecordedTools, ToolReplayMismatch
from jobs.repair.trace import (
    Divergence,
    RecordedRetriever,
    ReplayMismatch,
    Trace,
    compare_outcomes,
    load_trace,
)
from jobs.sandbox_workbench import SystemClock
from runners import wsfs
from runners.base import Runner
from runners.errors import UsageError
from runners.workspace import ephemeral_workspace


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What :func:`replay` found."""

    recorded: Trace
    replayed: Trace | None
    divergence: Divergence | None
    hint: str = ""
    """What to do about the divergence, when ARCS knows (e.g. the commit to check out)."""

    @property
    def reproduced(self) -> bool:
        """The replay reproduced the recorded patch and verdict."""
        return self.divergence is None


def replay(
    settings: EngineSettings,
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
    from jobs.config import load_repo_config
    from jobs.engine_ports import describe_toolchain
    from runners.commands import resolve_test_command

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
    runner_config = RunnerConfig.of(settings)
    toolchains: tuple[Path, ...] = ()
    if runner is None:
        toolchains = replay_toolchains(recorded, base, toolchain_paths, notify)
        runner = make_runner(runner_config, unsafe_no_sandbox, toolchains, base_config.setup_allow)
    tools = RecordedTools.of(recorded)
    spectrum = RecordedSpectrum.of(recorded.spectrum)
    ports = recorded_ports(recorded, runner, replay_llm, tools, spectrum, clock or SystemClock())
    setup = RepairSetup(
        repo=base,
        command=resolved,
        budget=recorded.budget,
        loop=LoopConfig.from_json(recorded.config),
        changes=recorded.task.changes,
        dependencies=DependencyStage.from_json(recorded.repo.get(TRACE_KEY)),
        memory_mb=base_config.memory_mb or 2048,
        exclude=tuple(settings.index_config().exclude),
        toolchain=describe_toolchain(runner, toolchains, base, image=runner_config.image),
    )
    with contextlib.ExitStack() as stack:
        repair = stack.enter_context(build(setup, ports))
        digest = repair.workbench.source().digest()
        want = str(recorded.repo.get("source_digest", ""))
        applied_base = recorded.repo.get("applied_base")
        if want and digest != want and isinstance(applied_base, dict):
            # The patch was applied after the run: replay on a copy with the base text restored.
            copy = stack.enter_context(ephemeral_workspace(base))
            _restore_base(copy, applied_base)
            repair = stack.enter_context(build(replace(setup, repo=copy), ports))
            digest = repair.workbench.source().digest()
        if want and digest != want:
            elsewhere, hint = source_divergence(recorded, base, want, digest)
            return ReplayReport(recorded, None, elsewhere, hint)
        held = budget_divergence(recorded, recorded.budget.with_(executions=repair.window))
        if held is not None:
            return ReplayReport(recorded, None, held)
        notify(f"replaying {recorded.id or trace_path} ({len(records)} recorded model calls)")
        try:
            result, _ = repair.run(recorded.task, _tier(recorded.tier_requested))
        except ReplayDivergence as exc:
            where = f"model call {exc.call_index + 1}" + (f" ({exc.purpose})" if exc.purpose else "")
            return ReplayReport(
                recorded,
                None,
                Divergence(where, "request", exc.expected_fingerprint[:16], exc.got_fingerprint[:16]),
            )
        except ToolReplayMismatch as exc:
            return ReplayReport(recorded, None, Divergence("tool calls", "call", "", str(exc)))
        except ReplayMismatch as exc:
            return ReplayReport(recorded, None, Divergence("retrieval", "query", "", str(exc)))
    replayed = result.trace
    divergence = compare_outcomes(recorded, replayed)
    if divergence is None and replay_llm is not None and not replay_llm.exhausted:
        divergence = Divergence("model calls", "count", str(len(records)), str(replay_llm.position))
    if divergence is None and not tools.exhausted:
        divergence = Divergence("tool calls", "count", str(len(tools.records)), str(tools.position))
    if divergence is None and spectrum.entry is not None and not spectrum.served:
        divergence = Divergence("spectrum", "served", "recorded", "never asked for")
    return ReplayReport(recorded, replayed, divergence)


def recorded_ports(
    recorded: Trace,
    runner: Runner,
    llm: ReplayLLM | None,
    tools: RecordedTools,
    spectrum: RecordedSpectrum,
    clock: Clock,
) -> RepairPorts:
    """The ports a replay of ``recorded`` runs with: the recorded model (a tier-0 run: templates),
    retrieval, interrupt, tool results and call path; the runner and git are live. Tool calls are
    answered with the recorded results, never re-executed (no test run, no index); the failing
    tests are not traced again."""
    from jobs.repair.proposers.anthropic import AnthropicProposer
    from jobs.repair.tier0.templates import TemplateProposer

    snapshot = recorded.index_snapshot
    return RepairPorts(
        runner=runner,
        proposer=AnthropicProposer(llm) if llm is not None else TemplateProposer(),
        clock=clock,
        llm=llm,
        interrupt=RecordedInterrupt.of(recorded),
        retrieval=(lambda: contextlib.nullcontext((RecordedRetriever(recorded), snapshot)))
        if snapshot
        else None,
        recorded_tools=tools,
        recorded_spectrum=spectrum,
    )


def replay_toolchains(
    recorded: Trace, base: Path, given: tuple[Path, ...], notify: Progress
) -> tuple[Path, ...]:
    """The toolchains of the replay: ``given`` (``--toolchain``, the active venv) and the ones the
    recorded run used (``repo["toolchains"]``; a trace from before they were recorded: the
    repository's own ``.venv``, as the engine adds it). A recorded folder that is gone is said."""
    from jobs.engine_ports import repo_toolchains

    saved = recorded.repo.get("toolchains")
    wanted = [Path(str(p)) for p in saved] if isinstance(saved, list) else list(repo_toolchains(base))
    out = list(given)
    for path in wanted:
        if path in out:
            continue
        if not path.is_dir():
            notify(
                f"note: the recorded toolchain {path} is not here; the replay may diverge (--toolchain DIR)"
            )
            continue
        out.append(path)
    return tuple(out)


def source_divergence(recorded: Trace, base: Path, want: str, digest: str) -> tuple[Divergence, str]:
    """The divergence of a base tree that is not the recorded one, and the commit to check out."""
    from indexing.gitutil import GitError, head_commit

    commit = str(recorded.repo.get("commit") or "")
    try:
        head = head_commit(base)
    except (GitError, UsageError):
        head = ""
    if commit and head != commit:
        return (
            Divergence("source", "commit", commit, head or "no commit"),
            f"the trace was recorded at commit {commit}; check it out and replay again: "
            f"git -C {base} checkout {commit}",
        )
    if commit:
        return (
            Divergence("source", "work tree", f"commit {commit} as committed", "uncommitted changes"),
            f"{base} has changes since the recorded commit {commit}; replay on a clean checkout of it: "
            f"git -C {base} stash (or git worktree add DIR {commit}, then --repo DIR)",
        )
    return (
        Divergence("source", "tree digest", want[:16], digest[:16]),
        "the trace records no commit (the folder was not a git repository); restore the files it ran on",
    )


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
    for rel, text in files.items():
        try:
            if text is None:
                wsfs.unlink(root, str(rel))
            else:
                wsfs.write_text(root, str(rel), str(text))
        except wsfs.Refused as exc:
            raise UsageError(f"replay: recorded path {rel!r} escapes the repository ({exc})") from None


def budget_divergence(trace: Trace, window: Budget) -> Divergence | None:
    """A trace recorded before #25 keeps the loop's own budget in ``repo["loop_budget"]`` (the whole
    budget less the change-first reserve; read, never written now); the replay recomputes the
    search's window from the task and the budget (``window``: the whole budget with the
    window's executions), so the two must agree. None: they do, or the trace records none (or a
    garbled one)."""
    recorded = trace.repo.get("loop_budget")
    if not isinstance(recorded, dict):
        return None
    names = trace.budget.as_dict()
    try:
        held = Budget(**{k: v for k, v in recorded.items() if k in names})
    except (TypeError, ValueError):
        return None
    if held == window:
        return None
    return Divergence("budget", "loop budget", str(held.as_dict()), str(window.as_dict()))


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
    "RecordedInterrupt",
    "ReplayReport",
    "budget_divergence",
    "recorded_ports",
    "replay",
    "replay_toolchains",
    "source_divergence",
]
