"""``arcs test`` (run a repository's tests in the sandbox) and ``arcs triage`` (analyze a CI log).

Toolchains: the sandbox shows commands a minimal read-only system (``/usr``) plus the Python
installation ARCS runs on. ``arcs test`` adds, as read-only toolchain folders whose ``bin`` leads
``PATH``: the active virtual environment (``sys.prefix`` when it differs from the base
installation, i.e. ``python -m pytest`` finds the venv's pytest), ``$VIRTUAL_ENV`` when set, and
every ``--toolchain DIR`` (a JDK, a Go or Node installation, a project venv).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.cli.context import Context
from bot.errors import UsageError
from runners.toolchains import toolchain_paths as toolchain_paths  # re-export: bench/repair

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MEMORY_MB = 2048
OUTPUT_TAIL_LINES = 20
"""How many of the command's last output lines ``arcs test`` shows without ``--output``."""
OUTPUT_LINE_CHARS = 300
"""Longer output lines are cut (a minified bundle's one line would fill the terminal)."""


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``test`` and ``triage``."""
    test = sub.add_parser(
        "test",
        parents=[common],
        help="run a repository's tests in the sandbox and report per-test results",
        description="Resolve the test command (--cmd, .arcs.yml `test:`, conventions), run it in a "
        "sandboxed private copy of PATH, and report passed/failed tests.",
    )
    test.add_argument("path", metavar="PATH", type=Path, help="repository folder")
    test.add_argument("--cmd", help="test command to run instead of the resolved one")
    test.add_argument("--timeout", type=float, metavar="S", help="wall-clock limit in seconds (default 600)")
    test.add_argument("--memory", type=int, metavar="MB", help="memory limit in MiB (default 2048)")
    test.add_argument(
        "--toolchain",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="folder to expose read-only in the sandbox, its bin/ first on PATH (repeatable)",
    )
    test.add_argument(
        "--output",
        action="store_true",
        help=f"show the command's whole captured output, not only its last {OUTPUT_TAIL_LINES} lines",
    )
    test.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run WITHOUT isolation (only for code you trust, where bubblewrap is unavailable)",
    )
    test.set_defaults(handler=run_test)

    triage = sub.add_parser(
        "triage",
        parents=[common],
        help="analyze a GitHub Actions job log: failing step, errors, tests, file:line, failure class",
        description="Read a GitHub Actions job log and report why it failed and whether ARCS would repair it.",
    )
    triage.add_argument("logfile", metavar="LOGFILE", help="job log file, or - for stdin")
    triage.add_argument(
        "--repo", type=Path, metavar="PATH", help="repository checkout: keep only file references into it"
    )
    triage.set_defaults(handler=run_triage)


def run_test(args: argparse.Namespace, ctx: Context) -> int:
    """``arcs test PATH``: exit 0 when every test passed, 1 otherwise."""
    from jobs.config import load_repo_config
    from runners.commands import resolve_test_command
    from runners.egress import EgressPolicy
    from runners.execute import run_tests
    from runners.factory import make_runner

    repo: Path = args.path
    if not repo.is_dir():
        raise UsageError(f"test: {repo} is not a folder")
    for path in args.toolchain:
        if not Path(path).is_dir():
            raise UsageError(f"test: toolchain {path} is not a folder")
    if (args.timeout is not None and args.timeout <= 0) or (args.memory is not None and args.memory <= 0):
        raise UsageError("test: --timeout and --memory must be positive")
    from bot.cli import inputs

    inputs.test_command(args.cmd, "--cmd", "test")
    inputs.finite(args.timeout, "--timeout", "test")
    inputs.repo_config(repo)  # the whole file, as the App reads it: an unknown key is an error (#23)
    config = load_repo_config(repo)
    exposed = toolchain_paths(args.toolchain)
    # The note names the node these folders provide, i.e. the one the sandbox runs.
    resolved = resolve_test_command(repo, explicit=args.cmd, config=config, toolchains=exposed)
    timeout_s = args.timeout or config.timeout_s or DEFAULT_TIMEOUT_S
    memory_mb = args.memory or config.memory_mb or DEFAULT_MEMORY_MB
    # SandboxUnavailable (an ArcsError) reaches the user as one line saying what to install.
    settings = ctx.settings
    runner = make_runner(
        unsafe_no_sandbox=args.unsafe_no_sandbox,
        toolchain_paths=exposed,
        kind=settings.runner,
        image=settings.runner_image,
        runtime=settings.runner_runtime,
        setup_network=EgressPolicy.build(
            settings.setup_network, settings.setup_network_allow, config.setup_allow
        ),
        limits=settings.sandbox_limits(),
    )
    ctx.out.info(f"arcs: running `{resolved.command}` ({resolved.source}) with {runner.name}")
    run = run_tests(runner, repo, resolved, timeout_s=timeout_s, memory_mb=memory_mb)
    data = run.to_dict()
    data["source"] = resolved.source
    data["runner"] = runner.name
    if resolved.note:
        data["note"] = resolved.note

    def human() -> str:
        failures = run.failures
        lines = [
            f"$ {resolved.command}   [{resolved.source}; {resolved.framework or 'unknown framework'}; "
            f"results from {run.source}]"
        ]
        summary = f"{len(run.passed_ids)} passed, {len(failures)} failed"
        if run.errors:
            summary += f", {len(run.errors)} errors"
        lines.append(f"{summary} in {run.duration_s:.1f}s (exit {run.exit_code})")
        for f in failures:
            where = f"{f.file}:{f.line}" if f.file else "?"
            first = f.message.splitlines()[0] if f.message else ""
            lines.append(f"FAILED {f.id}  {where}  {f.type or ''}{': ' if f.type and first else ''}{first}")
        for e in run.errors:
            first = e.message.splitlines()[0] if e.message else ""
            lines.append(f"ERROR  {e.id}  {e.type or ''}{': ' if e.type and first else ''}{first}")
        if run.truncated:
            lines.append("(output was truncated)")
        if run.environment:
            lines.append(f"environment: {run.environment}")
        if run.hint:
            lines.append(f"hint: {run.hint}")
        if resolved.note:
            lines.append(f"note: {resolved.note}")
        lines.extend(output_lines(run.output, whole=args.output))
        return "\n".join(lines)

    ctx.out.emit(data, human)
    return 0 if run.ok else 1


def output_lines(output: str, *, whole: bool = False) -> list[str]:
    """The command's output as ``arcs test`` prints it: a header, then its last
    :data:`OUTPUT_TAIL_LINES` lines (all of them with ``whole``), each cut at :data:`OUTPUT_LINE_CHARS`;
    nothing when the command printed nothing."""
    kept = output.rstrip().splitlines()
    while kept and not kept[0].strip():
        kept.pop(0)
    if not kept:
        return []
    shown = kept if whole else kept[-OUTPUT_TAIL_LINES:]
    head = (
        f"--- output ({len(kept)} lines) ---"
        if len(shown) == len(kept)
        else f"--- output (last {len(shown)} of {len(kept)} lines; --output shows all) ---"
    )
    cut = [ln if len(ln) <= OUTPUT_LINE_CHARS else ln[: OUTPUT_LINE_CHARS - 1] + "…" for ln in shown]
    return [head, *cut]


def run_triage(args: argparse.Namespace, ctx: Context) -> int:
    """``arcs triage LOGFILE``: print the failure report (exit 0 when the log could be read)."""
    from runners.execute import list_repo_files
    from runners.logs import analyze_log

    if args.logfile == "-":
        text = sys.stdin.read()
    else:
        path = Path(args.logfile)
        if not path.is_file():
            raise UsageError(f"triage: {path} is not a file")
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"triage: cannot read {path}: {exc}") from exc
    repo_files = None
    if args.repo is not None:
        if not args.repo.is_dir():
            raise UsageError(f"triage: {args.repo} is not a folder")
        repo_files = set(list_repo_files(args.repo))
    report = analyze_log(text, repo_files=repo_files)

    def human() -> str:
        lines = [f"{report.failure_class}: {report.reason}"]
        lines.append(f"repairable: {'yes' if report.repairable else 'no'}")
        if report.job:
            lines.append(f"job: {report.job}")
        if report.step is not None:
            code = f" (exit {report.step.exit_code})" if report.step.exit_code is not None else ""
            lines.append(f"step: {report.step.title}{code}")
        if report.test_ids:
            lines.append("failing tests:")
            lines.extend(f"  {t}" for t in report.test_ids)
        if report.locations:
            lines.append("locations: " + ", ".join(str(r) for r in report.locations[:10]))
        if report.error_lines:
            lines.append("errors:")
            lines.extend(f"  {e}" for e in report.error_lines[:10])
        if report.flaky_suspect:
            lines.append("note: the log shows signs of flakiness; triage re-runs will decide")
        return "\n".join(lines)

    ctx.out.emit(report.to_dict(), human)
    return 0
