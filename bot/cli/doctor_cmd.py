"""``arcs doctor``: check that this deployment can work (see :mod:`bot.doctor`).

Exit 0 when every check is ok or a warning, 1 when any check failed (a container health check or a
deploy script can rely on it), 2 for bad usage or a setting that does not even load.

Which checks run: ``--only``'s, else those of the use (``--for``, else :func:`bot.doctor.detect_use`):
the command line needs a writable ``ARCS_HOME``, the index store, the sandbox and the embedding
model (:data:`bot.doctor.CLI_CHECKS`), so someone who only runs ``arcs fix`` gets exit 0 without
a GitHub App; once an App setting is set, every check runs.
"""

from __future__ import annotations

import argparse
import os

from bot.cli.context import Context
from bot.doctor import (
    CHECKS,
    DoctorOptions,
    checks_for,
    detect_use,
    exit_code,
    parse_only,
    render_text,
    report,
    run_checks,
    use_line,
)
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
        help=f"comma-separated checks to run (default: those --for names): {','.join(CHECKS)}",
    )
    p.add_argument(
        "--timeout", type=float, default=10.0, help="seconds a network check may take (default: 10)"
    )
    p.add_argument(
        "--for",
        dest="use",
        choices=("cli", "app"),
        help="cli: what the command line needs (settings, qdrant, sandbox, embedder, llm); app: every check "
        "(default: app when an App setting such as ARCS_APP_ID or ARCS_DATABASE_URL is set, else cli)",
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
    use = None if args.only.strip() else (args.use or detect_use(options))
    if use is not None:
        only = checks_for(use)
    results = run_checks(settings, options, only=only)
    tail = f"{use_line(use)}\n" if use is not None else ""
    ctx.out.emit(report(results, use), lambda: render_text(results) + tail)
    return exit_code(results)
