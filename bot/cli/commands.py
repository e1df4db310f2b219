"""The list of command groups. Each module exposes ``register(subparsers, common)``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.cli import index_cmd

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]", argparse.ArgumentParser], None]

REGISTRY: list[Register] = [
    index_cmd.register,
]
