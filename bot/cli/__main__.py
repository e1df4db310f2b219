from __future__ import annotations

from bot.cli.app import run

run()
