"""``arcs doctor``: check that this deployment can work (see :mod:`bot.doctor`).

Exit 0 when every check is ok or a warning, 1 when any check failed (a container health check or a
deploy script can rely on it), 2 for bad usage or a setting that does not even load.
"""

from __future__ import annotations

import argparse
import os

from bot.cli.context import Context
from bot.doctor import CHECKS, DoctorOptions, exit_code, parse_only, render_text, report, run_checks
from bot.errors import ArcsError, UsageError
from bot.settings import Settings


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``doctor``."""
    p = sub.add_parser(
        "doctor",
        parents=[common],
        help="check this deployment: settings, database, broker, Qdrant, GitHub App, sandbox, model, LLM key",
        description="Check each dependency and say, in one line each, what works and how to fix what does not.",
    )
    p.add_argument(
        "--deep", action="store_true", help="also load the embedding model and embed a sample (slow)"
    )
    p.add_argument(
        "--offline", action="store_true", help="do not call the GitHub API (GET /app with the App's JWT)"
    )
    p.add_argument(
        "--only",
        default="",
        metavar="CHECKS",
        help=f"comma-separated checks to run (default: all): {','.join(CHECKS)}",
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, help="seconds a network check may take (default: 10)"
    )
    p.set_defaults(handler=run)


def secrets_file_fields(settings: Settings, effective: Settings) -> frozenset[str]:
    """The fields ``$ARCS_HOME/secrets.env`` supplied (set there, not in the environment)."""
    return frozenset(
        name
        for name in Settings.model_fields
        if getattr(settings, name) is None and getattr(effective, name) is not None
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Run the checks, print the report, exit 1 if any failed."""
    from bot.cli.context import effective_settings

    if args.timeout <= 0:
        raise UsageError("doctor: --timeout must be positive")
    only = parse_only(args.only)
    # What `arcs serve` sees: the environment plus the manifest flow's secrets.env.
    secrets_error: str | None = None
    try:
        settings = effective_settings(ctx.settings, os.environ)
    except ArcsError as exc:
        settings, secrets_error = ctx.settings, exc.message
    options = DoctorOptions(
        environ=dict(os.environ),
        deep=args.deep,
        offline=args.offline,
        timeout_s=args.timeout,
        from_secrets_file=secrets_file_fields(ctx.settings, settings),
        secrets_file_error=secrets_error,
    )
    results = run_checks(settings, options, only=only)
    ctx.out.emit(report(results), lambda: render_text(results))
    return exit_code(results)
