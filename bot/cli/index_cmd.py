"""``arcs index`` and ``arcs search`` (placeholder: filled by the index work)."""

from __future__ import annotations

import argparse


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``index`` and ``search``."""
    del sub, common
