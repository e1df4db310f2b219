"""``arcs fix`` (repair a local repository) and ``arcs replay`` (re-run a trace and compare).

Exit codes: 0 — ``fixed``: a patch passed every gate and the exact test command exited 0 on it
(``fix``) / the replay reproduced the recorded patch and verdict (``replay``); 1 — no fix (the
verdict and reason are printed) / the replay diverged (where is printed); 2 — usage or
configuration error; 3 — ``partial``: the targets pass but the command still fails, only on tests
proven failing at the known-good baseline (the last green commit, ``--since``; listed); 4 — ``environment``: the tests could not run (a missing
command, test runner or dependency, a failed setup step; the line says which ``.arcs.yml`` key
fixes it).

``fix`` prints the unified diff on stdout (so ``arcs fix . > fix.patch`` works) and the summary on
stderr; without a patch the summary goes to stdout. ``--apply`` writes the patch to the work tree.

The model configuration is read here, at the edge, from ``ANTHROPIC_API_KEY``, ``ARCS_MODEL``
and ``ANTHROPIC_BASE_URL``; traces go to ``ARCS_TRACES_DIR`` or ``$ARCS_HOME/traces``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bot.cli.context import Context
from bot.errors import UsageError
from jobs.wiring import default_jobs, llm_config

if TYPE_CHECKING:
    from jobs.fix import FixReport
    from jobs.repair.budget import Budget
    from jobs.repair.result import RepairResult

TIER_CHOICES = ("0", "small", "medium", "large", "auto")
ENVIRONMENT_HELP = """\
the repository's environment (README: "Your repository's environment"):
  The tests run in a sandbox on a private copy of PATH. Their Python is, first found:
  a --toolchain venv, the active venv ($VIRTUAL_ENV), the repository's .venv or venv
  (uv, pdm), pdm's .pdm-python, poetry's or hatch's env for this folder, .tox/* or
  .nox/*, else ARCS's own. A src layout (or pyproject's package-dir) is put on
  PYTHONPATH; an editable install in that venv is mapped to the copy's folder, so the
  package under test is imported from the copy, never from your checkout. Your own
  PYTHONPATH=... / env ... / -p no:... / -o addopts= forms work as typed.
  `setup:` in .arcs.yml (e.g. `pip install -e .`, `npm ci`) runs first, in a fresh
  environment of its own inside the copy (.arcs/env), with registry-only network.
  The first lines say what was used, e.g.
    environment: .venv (Python 3.11.7, 43 packages), src layout → PYTHONPATH=src
  A package under test that cannot be imported, a suite that runs no test and a
  failed setup stop with the verdict `environment` (exit 4) and the real error.
"""


def _add_sandbox_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--toolchain",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="folder to expose read-only in the sandbox, its bin/ first on PATH (repeatable)",
    )
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run tests WITHOUT isolation (only for code you trust, where bubblewrap is unavailable)",
    )


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``fix`` and ``replay``."""
    p = sub.add_parser(
        "fix",
        parents=[common],
        help="reproduce a failure in a local repository and repair it",
        description="Run the tests, reproduce the failure, and search for a patch that passes every "
        "quality gate within the budget. Prints the patch; --apply writes it to the work tree.",
        epilog=ENVIRONMENT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", metavar="PATH", type=Path, help="the repository")
    p.add_argument("--test", metavar="CMD", help="test command (default: .arcs.yml `test:` or conventions)")
    p.add_argument("--issue-file", type=Path, metavar="F", help="an issue to resolve (first line: title)")
    p.add_argument(
        "--tier",
        choices=TIER_CHOICES,
        default=None,
        help="0 (templates, no LLM), small, medium, large, or auto (default: .arcs.yml `tier:`, else auto: "
        "escalate small -> large; tier 0 without ANTHROPIC_API_KEY)",
    )
    p.add_argument("--budget-iterations", type=int, metavar="N", help="rounds at most (default 5)")
    p.add_argument("--budget-usd", type=float, metavar="X", help="LLM spend at most, in USD (default 2.0)")
    p.add_argument("--budget-tokens", type=int, metavar="N", help="LLM tokens at most (default 400000)")
    p.add_argument(
        "--budget-executions", type=int, metavar="N", help="sandboxed test runs at most (default 60)"
    )
    p.add_argument("--budget-wall", type=float, metavar="S", help="wall-clock seconds at most (default 1800)")
    p.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="candidates tested concurrently (default: 4, at most the CPU count)",
    )
    p.add_argument("--apply", action="store_true", help="write the patch to the work tree when it passes")
    p.add_argument(
        "--trace-out", type=Path, metavar="F", help="write the trace here (default $ARCS_HOME/traces)"
    )
    p.add_argument("--no-index", action="store_true", help="do not index the repository (no retrieval)")
    p.add_argument(
        "--since",
        metavar="REF",
        help="the last green commit: tier 0 first tries reverting single hunks/commits of REF..HEAD, "
        "and a formatter check's fix starts with the files changed since REF",
    )
    _add_sandbox_flags(p)
    p.set_defaults(handler=run_fix)

    r = sub.add_parser(
        "replay",
        parents=[common],
        help="re-run a trace with its recorded model responses and check it reproduces",
        description="Re-run the loop of TRACE with the recorded LLM responses and recorded retrieval on "
        "the same base tree; exit 0 when the same patch and verdict come out, else say where it diverged.",
    )
    r.add_argument("trace", metavar="TRACE", type=Path, help="a trace written by `arcs fix`")
    r.add_argument("--repo", type=Path, metavar="PATH", help="the repository (default: the recorded path)")
    _add_sandbox_flags(r)
    r.set_defaults(handler=run_replay)


def _budget(args: argparse.Namespace, base: Budget | None = None) -> Budget:
    """The flags' budget over ``base`` (``.arcs.yml`` ``budget:``; None: ARCS' defaults)."""
    from bot.cli.inputs import finite
    from jobs.repair.budget import Budget

    changes: dict[str, float] = {}
    for flag, name in (
        ("budget_iterations", "iterations"),
        ("budget_usd", "usd"),
        ("budget_tokens", "tokens"),
        ("budget_executions", "executions"),
        ("budget_wall", "wall_s"),
    ):
        value = finite(getattr(args, flag), "--" + flag.replace("_", "-"), "fix")
        if value is not None:
            changes[name] = value
    try:
        return (base or Budget()).with_(**changes)
    except ValueError as exc:
        raise UsageError(f"fix: {exc}") from None


def _toolchains(extra: list[Path]) -> tuple[Path, ...]:
    from runners.toolchains import toolchain_paths

    return tuple(toolchain_paths(extra))


def run_fix(args: argparse.Namespace, ctx: Context) -> int:
    """Repair PATH; print the patch or the verdict."""
    from bot.cli import inputs
    from jobs.fix import FixRequest, fix
    from jobs.repair.budget import Budget
    from jobs.repair.loop import LoopConfig
    from jobs.repair.tiers import parse_tier

    # Bad input stops here, before any sandbox, index or model (#23).
    inputs.git_work_tree(args.path, "fix")
    test_command = inputs.test_command(args.test, "--test", "fix")
    config = inputs.repo_config(args.path)
    llm = llm_config(ctx.settings)
    tier = args.tier or config.tier
    if args.tier is None and tier not in ("0", "auto") and not llm.configured:
        ctx.out.info(f"note: .arcs.yml asks for tier {tier}; without ANTHROPIC_API_KEY: tier 0 (no model)")
        tier = "0"
    issue_text = None
    if args.issue_file is not None:
        try:
            issue_text = args.issue_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"fix: cannot read the issue file {args.issue_file}: {exc}") from None
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("fix: --jobs must be at least 1")
    changes = None
    if args.since:
        from jobs.history import read_changeset

        changes = read_changeset(args.path, args.since)
        ctx.out.info(
            f"changes since {args.since}: {len(changes.commits)} commit(s), {len(changes.files)} file(s)"
        )
    request = FixRequest(
        repo=args.path,
        test_command=test_command,
        issue_text=issue_text,
        tier=parse_tier(tier),
        budget=_budget(args, config.budget.apply(Budget())),
        apply=args.apply,
        trace_out=args.trace_out,
        traces_dir=ctx.settings.traces_dir,
        llm=llm,
        config=LoopConfig(parallel=args.jobs or default_jobs()),
        unsafe_no_sandbox=args.unsafe_no_sandbox,
        toolchain_paths=_toolchains(args.toolchain),
        use_index=not args.no_index,
        changes=changes,
    )
    report = fix(ctx.settings, request, progress=ctx.out.info)
    return emit_fix(report, ctx)


EXIT_PARTIAL = 3
EXIT_ENVIRONMENT = 4


def exit_code_of(verdict: str) -> int:
    """The ``arcs fix`` exit code of a verdict (see the module docstring)."""
    return {"fixed": 0, "partial": EXIT_PARTIAL, "environment": EXIT_ENVIRONMENT}.get(verdict, 1)


def emit_fix(report: FixReport, ctx: Context) -> int:
    """Print a :class:`jobs.fix.FixReport` (JSON or human) and return the exit code."""
    from jobs.repair.trace import render_summary

    result = report.result
    trace_path = str(report.trace_path)
    for notice in result.notices:
        ctx.out.info(f"note: {notice}")
    summary = render_summary(result.trace, trace_path=trace_path)
    data = result.to_json(trace_path=trace_path)
    data["applied"] = report.applied
    if result.fixed:
        ctx.out.info(summary)
        if report.applied:
            ctx.out.info(f"applied the patch to {report.repo}")
        ctx.out.emit(data, result.patch)
        return 0
    if result.verdict == "partial" and result.patch:
        summary += "\n\n" + result.patch.rstrip()
    elif result.best.get("patch"):
        summary += (
            f"\n\nbest candidate {result.best.get('candidate', '')} (not a fix: not applied, never published):\n"
            + str(result.best["patch"]).rstrip()
        )
    if hint := since_hint(result, str(report.repo)):
        summary += f"\n\n{hint}"
    ctx.out.emit(data, summary)
    return exit_code_of(result.verdict)


_NO_HINT = frozenset({"fixed", "partial", "environment", "not_reproducible", "flaky", "interrupted"})


def since_hint(result: RepairResult, repo: str) -> str:
    """A tier-0 search that found no fix without knowing the change since green: suggest
    ``--since`` (reverting the change is often the fix, and it proves which failures are older)."""
    task = result.trace.task
    if result.verdict in _NO_HINT or task is None or task.changes is not None or "0" not in result.tiers:
        return ""
    return (
        "hint: if this broke after a commit where the tests passed, run "
        f"`arcs fix {repo} --since <that commit>`: tier 0 then tries undoing the change since it first, "
        "and failures that are older than the change are proven so"
    )


def run_replay(args: argparse.Namespace, ctx: Context) -> int:
    """Replay TRACE and report whether it reproduced."""
    from jobs.fix import replay

    report = replay(
        ctx.settings,
        args.trace,
        repo=args.repo,
        unsafe_no_sandbox=args.unsafe_no_sandbox,
        toolchain_paths=_toolchains(args.toolchain),
        progress=ctx.out.info,
    )
    rec = report.recorded.outcome
    div = report.divergence
    data = {
        "reproduced": report.reproduced,
        "verdict": rec.verdict,
        "patch_key": rec.patch_key,
        "trace_id": report.recorded.id,
        "divergence": None
        if div is None
        else {"where": div.where, "field": div.field, "expected": div.expected, "got": div.got},
        "replayed_verdict": None if report.replayed is None else report.replayed.outcome.verdict,
        "hint": report.hint,
    }
    if div is None:
        what = f"patch {rec.patch_key}" if rec.patch_key else "no patch"
        ctx.out.emit(data, f"replay reproduced the recorded outcome: {rec.verdict} ({what})")
        return 0
    ctx.out.emit(data, f"replay {div}" + (f"\n{report.hint}" if report.hint else ""))
    return 1


__all__ = [
    "EXIT_ENVIRONMENT",
    "EXIT_PARTIAL",
    "default_jobs",
    "emit_fix",
    "exit_code_of",
    "llm_config",
    "register",
    "run_fix",
    "run_replay",
    "since_hint",
]
