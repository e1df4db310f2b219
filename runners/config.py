"""What a repository's ``.arcs.yml`` tells the runners, as plain values.

The file itself is read and validated in :mod:`jobs.config` (the one schema); runners only get
this value (the test command, setup, limits and the setup step's extra hosts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class RepoConfig:
    """What ``.arcs.yml`` says; every field is optional."""

    test: str | None = None
    setup: str | None = None
    """Commands joined with `` && `` when the file gives a list."""
    timeout_s: float | None = None
    memory_mb: int | None = None
    setup_allow: tuple[str, ...] = ()
    """``setup_network.allow``: extra hosts for the setup step (never a non-public address)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Keys this version does not know, as parsed."""
    path: Path | None = None
    """The file this came from (None: no file, defaults)."""
