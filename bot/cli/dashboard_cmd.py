"""``arcs dashboard``: the App's dashboard over this machine's runs, on loopback, without login.

Shows the attempts, traces, patches, gates and costs of ``arcs fix``, ``arcs demo`` and
``arcs action`` recorded under ``ARCS_HOME`` (:mod:`bot.dashboard.local`). A ``--host`` that is not
a loopback address is refused (exit 2): the dashboard has no login.
"""

from __future__ import annotations

import argparse

from bot.cli.context import Context
from bot.errors import UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8001
"""Next to ``arcs serve``'s 8000, so both can run on one machine."""


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``dashboard``."""
    p = sub.add_parser(
        "dashboard",
        parents=[common],
        help="browse the runs of arcs fix/demo/action on this machine (loopback only, no login)",
        description="Serve the dashboard (the App's pages) over the runs recorded under ARCS_HOME: "
        "attempts, traces, patches, gates and costs. Binds a loopback address only; there is no login.",
    )
    p.add_argument("--host", default=DEFAULT_HOST, help=f"loopback address to bind (default {DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.set_defaults(handler=run_dashboard)


def run_dashboard(args: argparse.Namespace, ctx: Context) -> int:
    """Record new traces, print the URL, serve until interrupted."""
    from bot.dashboard.local import check_loopback, create_local_app, local_store, sync_traces

    host = check_loopback(args.host)
    if not 0 < args.port <= 65535:
        raise UsageError(f"dashboard: --port must be 1-65535, got {args.port}")
    import uvicorn

    store = local_store(ctx.settings)
    try:
        result = sync_traces(store, ctx.settings.traces_dir, home=ctx.settings.home)
        for line in result.skipped:
            ctx.out.info(f"note: skipped {ctx.settings.traces_dir}/{line}")
        app = create_local_app(ctx.settings, store)
        shown = f"[{host}]" if ":" in host else host
        ctx.out.emit(
            {"url": f"http://{shown}:{args.port}/", "recorded": result.imported},
            f"arcs dashboard: http://{shown}:{args.port}/ (runs under {ctx.settings.home}; Ctrl-C stops it)",
        )
        uvicorn.run(app, host=host, port=args.port, log_level="warning", server_header=False)
    finally:
        store.close()
    return 0


__all__ = ["register", "run_dashboard"]
