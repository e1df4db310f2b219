"""What made a fix, as ``.arcs.yml`` ``auto_apply`` names it: ``format``, ``lint``, ``template``,
``revert`` or ``llm`` (:data:`jobs.config_model.FIX_KINDS`).

The kind is the proposer of the candidate the loop selected, as the repair's trace records it
(``outcome.candidate`` -> that candidate's ``proposer`` and ``variant``):

* ``autofix`` (:mod:`jobs.repair.tier0.autofix`: a tool's own fix mode, its variant the tools
  joined with ``+``): ``lint`` when any tool is a linter (:data:`LINT_TOOLS`: it may change
  behaviour, e.g. remove an unused import), else ``format``;
* ``tier0`` (:mod:`jobs.repair.tier0.templates`): ``template``;
* ``revert`` (:mod:`jobs.repair.tier0.reverts`: lines of the change since green put back): ``revert``;
* any other proposer (the model's): ``llm``.

The trace is read from the shared traces directory (``ARCS_HOME``); a trace that cannot be read,
lies outside that directory or names no selected candidate gives ``None``: an unknown kind is
never applied on its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobs.config_model import FixKind
from jobs.repair.tier0.autofix import PROPOSER as AUTOFIX
from jobs.repair.tier0.reverts import PROPOSER as REVERT
from jobs.repair.tier0.templates import PROPOSER as TEMPLATE
from jobs.repair.trace_read import TraceDoc

__all__ = ["FORMAT_TOOLS", "LINT_TOOLS", "kind_of", "kind_of_trace", "read_fix_kind"]

LINT_TOOLS: frozenset[str] = frozenset({"ruff-check", "eslint"})
"""Tools of ``formatters.json`` whose fix mode is a linter's (it can change what code does)."""
FORMAT_TOOLS: frozenset[str] = frozenset(
    {"ruff-format", "black", "isort", "prettier", "gofmt", "goimports", "rustfmt", "cargo-fmt"}
)
"""Tools whose fix mode only lays code out (a test keeps both sets covering the whole table)."""
MAX_TRACE_BYTES = 64 * 1024 * 1024
"""A trace larger than this is not read for its kind (ARCS' traces are far smaller)."""


def kind_of(proposer: str, variant: str = "") -> FixKind:
    """The kind of a candidate made by ``proposer`` (its ``variant``: for autofix, the tools)."""
    if proposer == AUTOFIX:
        tools = {tool for tool in variant.split("+") if tool}
        return "lint" if tools & LINT_TOOLS or not tools <= FORMAT_TOOLS else "format"
    if proposer == TEMPLATE:
        return "template"
    if proposer == REVERT:
        return "revert"
    return "llm"


def kind_of_trace(data: object) -> FixKind | None:
    """The kind of the candidate a trace document (``Trace.to_json``) selected, or None."""
    doc = TraceDoc.read(data)
    chosen = doc.outcome.candidate
    if not doc.is_trace or not chosen:
        return None
    for rnd in doc.rounds:
        for cand in rnd.candidates:
            if cand.id == chosen:
                return kind_of(cand.proposer, cand.variant)
    return None


def read_fix_kind(trace_path: str | None, traces_dir: Path) -> FixKind | None:
    """The kind of the fix whose trace is at ``trace_path`` (inside ``traces_dir``), or None."""
    if not trace_path:
        return None
    try:
        root = traces_dir.resolve()
        path = Path(trace_path).resolve()
        if not path.is_relative_to(root) or not path.is_file() or path.stat().st_size > MAX_TRACE_BYTES:
            return None
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return kind_of_trace(data) if isinstance(data, Mapping) else None
