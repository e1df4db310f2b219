"""Errors that reach a user as one clear line.

The classes live in :mod:`runners.errors` (a stdlib-only leaf on the ground floor, so every layer
raises the same types); this module re-exports them for the ``bot`` side.
"""

from __future__ import annotations

from runners.errors import ArcsError, ConfigError, UsageError

__all__ = ["ArcsError", "ConfigError", "UsageError"]
