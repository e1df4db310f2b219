"""``arcs worker``: run the background job workers (needs ``ARCS_BROKER_URL``).

The worker consumes the queues of :data:`jobs.broker.QUEUES` (or the ones named with
``--queues``), runs N processes of M threads, and stops gracefully on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse

from bot.cli.context import Context
from bot.errors import UsageError


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``worker``."""
    p = sub.add_parser(
        "worker", parents=[common], help="run the background job workers (needs ARCS_BROKER_URL)"
    )
    p.add_argument("--processes", type=int, default=1, help="worker processes (default: 1)")
    p.add_argument("--threads", type=int, default=4, help="threads per process (default: 4)")
    p.add_argument(
        "--queues",
        default="",
        help="comma-separated queues to consume (default: all; e.g. arcs-github,arcs-index)",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds running jobs get to finish on SIGTERM before they are redelivered (default: 30)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Validate the options and run the workers until stopped."""
    import os

    from bot.cli.context import effective_settings
    from bot.worker_wiring import worker_spec
    from jobs.broker import QUEUES
    from jobs.worker import require_shared_broker, run_worker

    if args.processes < 1:
        raise UsageError("worker: --processes must be at least 1")
    if args.threads < 1:
        raise UsageError("worker: --threads must be at least 1")
    if args.grace < 0:
        raise UsageError("worker: --grace must not be negative")
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    known = sorted(set(QUEUES.values()))
    unknown = [q for q in queues if q not in known]
    if unknown:
        raise UsageError(f"worker: unknown queue(s) {', '.join(unknown)}; known: {', '.join(known)}")
    # The manifest flow writes the App's credentials to $ARCS_HOME/secrets.env; workers need them too.
    settings = effective_settings(ctx.settings, os.environ)
    spec = worker_spec(settings)
    kind = require_shared_broker(spec.broker)
    ctx.out.info(
        f"arcs worker: {args.processes} process(es) x {args.threads} thread(s) on {kind}, "
        f"queues: {', '.join(queues or known)}"
    )
    code = run_worker(
        spec,
        processes=args.processes,
        threads=args.threads,
        queues=queues or None,
        grace_s=args.grace,
    )
    ctx.out.emit({"stopped": True, "exit_code": code}, "arcs worker: stopped")
    return code
