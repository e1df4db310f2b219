"""The host folders a sandbox exposes read-only as toolchains (a venv, a JDK, a Go or Node install).

The sandbox shows commands a minimal read-only system (``/usr``) plus the Python installation ARCS
runs on. :func:`toolchain_paths` adds, as folders whose ``bin`` leads ``PATH``: the active virtual
environment (``sys.prefix`` when it differs from the base installation, so ``python -m pytest``
finds the venv's pytest), ``$VIRTUAL_ENV`` when set, and every extra folder the caller names
(``--toolchain DIR``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["toolchain_paths"]


def toolchain_paths(
    extra: Sequence[Path] = (),
    *,
    prefix: str = sys.prefix,
    base_prefix: str = sys.base_prefix,
    environ: Mapping[str, str] | None = None,
) -> list[Path]:
    """The folders to expose to the sandbox (see the module docstring), absolute and de-duplicated.

    ``environ`` defaults to the process environment; pass ``{}`` to ignore ``$VIRTUAL_ENV``.
    """
    env = os.environ if environ is None else environ
    candidates: list[Path] = []
    if prefix != base_prefix:
        candidates.append(Path(prefix))
    venv = env.get("VIRTUAL_ENV")
    if venv:
        candidates.append(Path(venv))
    candidates.extend(extra)
    out: list[Path] = []
    for path in candidates:
        resolved = path.absolute()
        if resolved.is_dir() and resolved not in out:
            out.append(resolved)
    return out
