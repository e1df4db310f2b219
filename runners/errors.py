"""Errors that reach a user as one clear line.

They live on the ground floor, in a stdlib-only leaf that every package may import (the import
contracts list it under ``leaves``), so every layer (runners, indexing, jobs/repair, jobs, bot)
raises the same types and the CLI maps them to exit codes in one place. :mod:`bot.errors`
re-exports them, so existing ``except`` sites keep working unchanged.
"""

from __future__ import annotations

__all__ = ["ArcsError", "ConfigError", "UsageError"]


class ArcsError(Exception):
    """Base class for errors that are reported to the user as a single line.

    ``exit_code`` follows the CLI contract: 2 for bad usage or configuration, 1 for an
    operation that ran but did not succeed.
    """

    exit_code: int = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        """The one-line message (newlines folded so the contract holds)."""
        return " ".join(str(self).split())


class ConfigError(ArcsError):
    """Settings or a config file are malformed."""


class UsageError(ArcsError):
    """The command line is malformed or names something that does not exist."""
