"""The ``arcs`` command line: one entry point, one module per group of subcommands."""

from __future__ import annotations

from bot.cli.app import main

__all__ = ["main"]
