"""``arcs demo``: materialize the bundled broken repository and fix it end to end.

The demo runs exactly what ``arcs fix --tier 0 --apply`` does on the copy: reproduce the failing
test in the sandbox, triage it, search template candidates (no LLM, no cost), gate and test them,
write the patch to the copy and the trace under ``$ARCS_HOME/traces``. Exit 0 when fixed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.cli.context import Context
from bot.samples import materialize_sample


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``demo``."""
    p = sub.add_parser("demo", parents=[common], help="fix the bundled broken repository end to end")
    p.add_argument("--sample", default="inventory", help="bundled sample name (default: inventory)")
    p.add_argument("--dest", type=Path, help="where to materialize it (default: $ARCS_HOME/demo/<sample>)")
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run the sample's tests WITHOUT isolation (where bubblewrap is unavailable)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Materialize the sample and run ``fix`` on it with tier 0."""
    from jobs.fix import FixRequest, fix
    from jobs.repair.loop import LoopConfig
    from jobs.repair.trace import render_summary
    from jobs.wiring import default_jobs
    from runners.toolchains import toolchain_paths

    dest: Path = args.dest or ctx.settings.home / "demo" / args.sample
    repo = materialize_sample(args.sample, dest)
    ctx.out.info(f"demo: materialized sample {args.sample!r} at {repo}")
    report = fix(
        ctx.settings,
        FixRequest(
            repo=repo,
            tier="0",
            apply=True,
            traces_dir=ctx.settings.traces_dir,
            unsafe_no_sandbox=args.unsafe_no_sandbox,
            toolchain_paths=tuple(toolchain_paths()),
            use_index=False,
            config=LoopConfig(parallel=default_jobs()),
        ),
        progress=ctx.out.info,
    )
    result = report.result
    data = {
        "repo": str(repo),
        "sample": args.sample,
        **result.to_json(trace_path=str(report.trace_path)),
        "applied": report.applied,
    }

    def human() -> str:
        lines = [render_summary(result.trace, trace_path=str(report.trace_path))]
        if result.patch:
            lines += ["", result.patch.rstrip()]
        if report.applied:
            lines += ["", f"the patch was applied to {repo}; replay it with: arcs replay {report.trace_path}"]
        return "\n".join(lines)

    ctx.out.emit(data, human)
    from bot.cli.fix_cmd import exit_code_of

    return exit_code_of(result.verdict)
