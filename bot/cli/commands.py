"""The list of command groups. Each module exposes ``register(subparsers, common)``."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from bot.cli import (
    action_cmd,
    dashboard_cmd,
    deflake_cmd,
    demo_cmd,
    doctor_cmd,
    fix_cmd,
    index_cmd,
    serve_cmd,
    test_cmd,
    worker_cmd,
)

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]", argparse.ArgumentParser], None]

REGISTRY: list[Register] = [
    index_cmd.register,
    test_cmd.register,
    deflake_cmd.register,
    fix_cmd.register,
    serve_cmd.register,
    worker_cmd.register,
    demo_cmd.register,
    doctor_cmd.register,
    action_cmd.register,
    dashboard_cmd.register,
]
