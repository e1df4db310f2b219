"""Parser, dispatch and the error contract of the ``arcs`` CLI.

Contract: every subcommand accepts ``--json``; exit 0 on success, 1 when the operation ran but
did not succeed, 2 with a single ``arcs: error: ...`` line for bad usage or configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from bot.cli.context import Context, Output
from bot.errors import ArcsError, UsageError
from bot.settings import Settings, load_settings


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing a usage block and exiting."""

    def error(self, message: str) -> NoReturn:
        # "arcs search: the following arguments are required: QUERY" -- one line, exit 2.
        where = self.prog.removeprefix("arcs").strip()
        raise UsageError(f"{where}: {message}" if where else message)


Handler = Callable[[argparse.Namespace, Context], int]


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print machine-readable JSON on stdout")
    return common


def arcs_version() -> str:
    """The installed ARCS distribution's version (``0+unknown`` when run from an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("arcs")
    except PackageNotFoundError:
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    """Build the full parser; each command group registers its own subcommands."""
    from bot.cli import commands

    parser = _Parser(prog="arcs", description="ARCS: automated repair of code with search.")
    parser.add_argument("--version", action="store_true", help="print ARCS' version and exit")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser
    )
    common = _common()
    for register in commands.REGISTRY:
        register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None, *, settings: Settings | None = None) -> int:
    """Run the CLI and return the exit code (the console script exits with it)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in args_list
    out = Output(json_mode=json_mode)
    try:
        parser = build_parser()
        args = parser.parse_args(args_list)
        if args.version:
            sys.stdout.write(f"arcs {arcs_version()}\n")
            return 0
        handler: Handler | None = getattr(args, "handler", None)
        if handler is None:
            parser.print_help(sys.stderr)
            return 2
        ctx = Context(settings=settings or load_settings(), out=out)
        from bot.logging import configure_logging

        configure_logging(ctx.settings, stream=sys.stderr)
        return handler(args, ctx)
    except ArcsError as exc:
        sys.stderr.write(f"arcs: error: {exc.message}\n")
        if json_mode:
            sys.stdout.write(json.dumps({"error": exc.message, "exit_code": exc.exit_code}) + "\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("arcs: interrupted\n")
        return 130


def run() -> NoReturn:  # pragma: no cover - console script shim
    """Entry point used by ``python -m bot.cli``."""
    raise SystemExit(main())
