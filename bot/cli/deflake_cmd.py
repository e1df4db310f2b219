"""``arcs deflake PATH --test TEST_ID [--runs N]``: measure a flaky test and name its likely cause.

The test runs N times in ARCS' sandbox in varied orders (its file as written, alone with a fixed
and with varied hash seeds, after each neighbour, the file shuffled with a seed); the classifier
(:mod:`jobs.repair.flaky_cause`) names the cause with its evidence, e.g. the polluting test of an
order dependence. Proposing a fix through the repair loop is not part of this command yet.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.cli.context import Context
from bot.cli.test_cmd import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, toolchain_paths
from bot.errors import UsageError

DEFAULT_RUNS = 20
"""max(3k, 20) runs validate a 1-in-k flake; 20 is the floor."""


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``deflake``."""
    p = sub.add_parser(
        "deflake",
        parents=[common],
        help="measure a flaky test's failure rate in varied orders and classify the likely cause",
        description="Run one test N times in the sandbox (alone, after each neighbour, its file shuffled) "
        "and report its failure rate and the likely cause with the evidence. Does not propose a fix yet.",
    )
    p.add_argument("path", metavar="PATH", type=Path, help="repository folder")
    p.add_argument(
        "--test", required=True, metavar="TEST_ID", help="pytest node id, e.g. tests/test_a.py::test_x"
    )
    p.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, metavar="N", help=f"runs (default {DEFAULT_RUNS})"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the shuffled orders (default 0)")
    p.add_argument("--cmd", help="test command to run instead of the resolved one")
    p.add_argument(
        "--timeout", type=float, metavar="S", help="wall-clock limit per run in seconds (default 600)"
    )
    p.add_argument(
        "--toolchain",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="as in `arcs test` (repeatable)",
    )
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run WITHOUT isolation (only for code you trust, where bubblewrap is unavailable)",
    )
    p.set_defaults(handler=run_deflake)


def run_deflake(args: argparse.Namespace, ctx: Context) -> int:
    """Exit 0 when the measurement ran (flaky or not), 1 when the test never ran."""
    from bot.cli import inputs
    from jobs.config import load_repo_config
    from jobs.deflake import measure
    from runners.commands import resolve_test_command
    from runners.egress import EgressPolicy
    from runners.factory import make_runner

    repo: Path = args.path
    if not repo.is_dir():
        raise UsageError(f"deflake: {repo} is not a folder")
    if args.runs < 2 or args.runs > 1000:
        raise UsageError("deflake: --runs must be between 2 and 1000")
    if "::" not in args.test:
        raise UsageError("deflake: --test takes a node id with its file (tests/test_a.py::test_x)")
    inputs.test_command(args.cmd, "--cmd", "deflake")
    inputs.finite(args.timeout, "--timeout", "deflake")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("deflake: --timeout must be positive")
    inputs.repo_config(repo)
    config = load_repo_config(repo)
    resolved = resolve_test_command(repo, explicit=args.cmd, config=config)
    settings = ctx.settings
    runner = make_runner(
        unsafe_no_sandbox=args.unsafe_no_sandbox,
        toolchain_paths=toolchain_paths(args.toolchain),
        kind=settings.runner,
        image=settings.runner_image,
        runtime=settings.runner_runtime,
        setup_network=EgressPolicy.build(
            settings.setup_network, settings.setup_network_allow, config.setup_allow
        ),
        limits=settings.sandbox_limits(),
    )
    ctx.out.info(f"arcs: {args.runs} runs of {args.test} with `{resolved.command}` ({runner.name})")
    try:
        m = measure(
            runner,
            repo,
            resolved,
            args.test,
            args.runs,
            seed=args.seed,
            timeout_s=args.timeout or config.timeout_s or DEFAULT_TIMEOUT_S,
            memory_mb=config.memory_mb or DEFAULT_MEMORY_MB,
        )
    except ValueError as exc:
        raise UsageError(f"deflake: {exc}") from exc
    d = m.diagnosis
    data = d.to_dict()
    data["neighbours"] = m.neighbours
    data["fix"] = "not proposed: `arcs deflake` measures and classifies only (fixes through the loop: later)"
    data["runs_detail"] = [
        {
            "order": o.order.kind,
            "tests": list(o.order.tests),
            "hash_seed": o.order.hash_seed,
            "seed": o.order.seed,
            "outcome": o.outcome,
            "type": o.type,
            "message": (o.message.splitlines() or [""])[0][:300],
        }
        for o in m.observed
    ]

    def human() -> str:
        lines = [f"{d.test_id}: {d.cause} (failed {d.failures}/{d.runs}, rate {d.rate:.0%})"]
        if d.polluter:
            lines.append(f"polluting test: {d.polluter}")
        lines.append("evidence:")
        lines += [f"  {e}" for e in d.evidence]
        lines.append("fix: not proposed (this command measures and classifies only)")
        return "\n".join(lines)

    ctx.out.emit(data, human)
    return 0 if d.runs else 1
