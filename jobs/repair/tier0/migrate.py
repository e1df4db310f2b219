"""Tier 0: migrate the repository's code across a dependency's breaking API change (issue #27).

Pure. From the API difference of a bumped dependency (:mod:`jobs.repair.depupdate.compare`),
the changes that name their replacement are applied to the repository's Python files, found with
:mod:`ast` and rewritten by exact source positions:

* a renamed name: ``from markupsafe import soft_unicode`` -> ``from markupsafe import soft_str``
  and the file's uses of the name; ``markupsafe.soft_unicode`` -> ``markupsafe.soft_str``;
* a moved name: ``from jinja2 import Markup`` -> ``from markupsafe import Markup`` (split out of
  a multi-name import); ``jinja2.Markup`` -> ``markupsafe.Markup`` with ``import markupsafe``
  added after the file's ``import jinja2``;
* a renamed keyword: ``f(node=…)`` -> ``f(ast=…)`` at the calls of that function (imported from
  its module) or, for a method, at calls of a method of that name that pass that keyword.

A rewrite that does not parse afterwards is dropped. Candidates: all applicable changes at once
first (a migration is usually all-or-nothing), then each change alone; each is verified by the
loop like any candidate.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.model import Edit, Proposal
from jobs.repair.tier0.anchor import replace_pair
from jobs.repair.tier0.migrate_js import migrate_js

PROPOSER = "depupdate"
MIGRATABLE = ("renamed", "moved", "keyword_renamed")
MAX_FILE_CHARS = 500_000

Span = tuple[int, int, str]
"""(start offset, end offset, replacement) in a file's text."""


@dataclass(frozen=True, slots=True)
class MigrationCandidate:
    """One migration with the API changes it applies and the number of sites it rewrote."""

    label: str
    proposal: Proposal
    changes: tuple[ApiChange, ...]
    sites: int


class _Offsets:
    """ast positions (1-based lines, UTF-8 byte columns) -> offsets in the text."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def at(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        end_line = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        end_col = getattr(node, "end_col_offset", None) or 0
        return self.at(node.lineno, node.col_offset), self.at(end_line, end_col)  # type: ignore[attr-defined]

    def line_end(self, lineno: int) -> int:
        return self.starts[lineno] - 1


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _indent(text: str, offsets: _Offsets, lineno: int) -> str:
    line = offsets.lines[lineno - 1]
    return line[: len(line) - len(line.lstrip())]


def _rewrite(text: str, tree: ast.Module, change: ApiChange) -> list[Span]:
    """The spans that apply one change to one file (none when the file does not use it)."""
    off = _Offsets(text)
    spans: list[Span] = []
    if change.kind == "keyword_renamed":
        return _keyword(tree, off, change)
    target_mod, _, target_name = change.replacement.rpartition(".")
    old = change.name
    local_names: set[str] = set()  # names the file binds to the old symbol without an alias
    module_bindings: dict[str, str] = {}  # local dotted prefix -> module it names
    first_import: ast.Import | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == change.module:
            hits = [a for a in node.names if a.name == old]
            if not hits:
                continue
            alias = hits[0]
            if target_mod == change.module:
                a0, a1 = off.span(alias)
                spans.append((a0, a1, target_name + (f" as {alias.asname}" if alias.asname else "")))
            else:
                bound = alias.asname or (old if target_name != old else "")
                new_import = f"from {target_mod} import {target_name}" + (f" as {bound}" if bound else "")
                if len(node.names) == 1:
                    s0, s1 = off.span(node)
                    spans.append((s0, s1, new_import))
                else:
                    spans.append(_drop_alias(text, off, node, alias))
                    end = off.line_end(node.end_lineno or node.lineno)
                    spans.append((end, end, "\n" + _indent(text, off, node.lineno) + new_import))
            if not alias.asname and target_name != old and target_mod == change.module:
                local_names.add(old)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name == change.module:
                    module_bindings[a.asname] = a.name
                elif not a.asname and _reaches(a.name, change.module):
                    module_bindings[change.module] = change.module
                else:
                    continue
                if first_import is None:
                    first_import = node
    uses = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == old:
            prefix = _dotted(node.value)
            if prefix in module_bindings:
                s0, s1 = off.span(node)
                new = f"{prefix}.{target_name}" if target_mod == change.module else change.replacement
                spans.append((s0, s1, new))
                uses += 1
        elif isinstance(node, ast.Name) and node.id in local_names:
            s0, s1 = off.span(node)
            spans.append((s0, s1, target_name))
    if uses and target_mod != change.module and first_import is not None and not _imports(tree, target_mod):
        end = off.line_end(first_import.end_lineno or first_import.lineno)
        spans.append((end, end, "\n" + _indent(text, off, first_import.lineno) + f"import {target_mod}"))
    return spans


def _reaches(imported: str, module: str) -> bool:
    """True when ``import <imported>`` makes ``<module>.x`` reachable by that dotted name."""
    return imported == module or imported.startswith(module + ".") or module.startswith(imported + ".")


def _imports(tree: ast.Module, module: str) -> bool:
    return any(
        isinstance(n, ast.Import) and any(a.name == module and not a.asname for a in n.names)
        for n in ast.walk(tree)
    )


def _drop_alias(text: str, off: _Offsets, node: ast.ImportFrom, alias: ast.alias) -> Span:
    """Remove one name of a multi-name ``from … import a, b`` (with its comma)."""
    i = node.names.index(alias)
    a0, a1 = off.span(alias)
    if i + 1 < len(node.names):
        n0, _ = off.span(node.names[i + 1])
        return a0, n0, ""
    _, p1 = off.span(node.names[i - 1])
    return p1, a1, ""


def _keyword(tree: ast.Module, off: _Offsets, change: ApiChange) -> list[Span]:
    func = change.name.split(".")[-1]
    is_method = "." in change.name
    names = {func} if not is_method else set()
    if not is_method:
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == change.module:
                names |= {a.asname or a.name for a in node.names if a.name == func}
    spans: list[Span] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = _dotted(node.func)
        if is_method:
            ok = isinstance(node.func, ast.Attribute) and node.func.attr == func
        else:
            ok = (
                callee in names
                or callee.endswith(f"{change.module.split('.')[-1]}.{func}")
                or callee == f"{change.module}.{func}"
            )
        if not ok:
            continue
        for kw in node.keywords:
            if kw.arg == change.keyword:
                s0 = off.at(kw.lineno, kw.col_offset)
                spans.append((s0, s0 + len(change.keyword), change.replacement))
    return spans


def _apply(text: str, spans: Iterable[Span]) -> str | None:
    ordered = sorted(set(spans), key=lambda s: (s[0], s[1]))
    for (_a0, a1, _), (b0, _b1, _) in itertools.pairwise(ordered):
        if b0 < a1:
            return None  # overlapping rewrites: not one this module can make
    out = text
    for s0, s1, new in reversed(ordered):
        out = out[:s0] + new + out[s1:]
    return out


def migrate_files(
    changes: Sequence[ApiChange], paths: Iterable[str], read: Callable[[str], str | None]
) -> tuple[list[Edit], int]:
    """Edits that apply ``changes`` to the Python files among ``paths`` (and to the imports of the
    JavaScript/TypeScript ones, :mod:`jobs.repair.tier0.migrate_js`), and the sites rewritten."""
    edits: list[Edit] = []
    sites = 0
    wanted = [c for c in changes if c.kind in MIGRATABLE and c.replacement]
    if not wanted:
        return [], 0
    tops = {c.module.split(".")[0] for c in wanted}
    for path in sorted(set(paths)):
        js = migrate_js(path, read, wanted)
        if js is not None:
            pair = replace_pair(js[0], js[1])
            if pair is not None:
                edits.append(Edit(path=path, kind="replace", old=pair[0], new=pair[1]))
                sites += js[2]
            continue
        if not path.endswith((".py", ".pyi")):
            continue
        text = read(path)
        if text is None or len(text) > MAX_FILE_CHARS or not any(t in text for t in tops):
            continue
        current = text
        for change in wanted:
            try:
                tree = ast.parse(current)
            except (SyntaxError, ValueError):
                break
            spans = _rewrite(current, tree, change)
            new = _apply(current, spans) if spans else None
            if new is None:
                continue
            try:
                ast.parse(new)
            except (SyntaxError, ValueError):
                continue
            sites += len(spans)
            current = new
        pair = replace_pair(text, current)
        if pair is not None:
            edits.append(Edit(path=path, kind="replace", old=pair[0], new=pair[1]))
    return edits, sites


def migration_candidates(
    package: str,
    versions: str,
    changes: Sequence[ApiChange],
    paths: Iterable[str],
    read: Callable[[str], str | None],
    *,
    limit: int = 6,
) -> list[MigrationCandidate]:
    """Up to ``limit`` candidates: every applicable change at once, then each alone.
    ``versions``: ``old -> new`` for the explanation."""
    paths = list(paths)
    wanted = [c for c in changes if c.kind in MIGRATABLE and c.replacement]
    out: list[MigrationCandidate] = []
    groups: list[tuple[ApiChange, ...]] = [tuple(wanted)] + (
        [(c,) for c in wanted] if len(wanted) > 1 else []
    )
    seen: set[tuple[Edit, ...]] = set()
    for group in groups:
        edits, sites = migrate_files(group, paths, read)
        if not edits or tuple(edits) in seen:
            continue
        seen.add(tuple(edits))
        applied = [c for c in group if migrate_files([c], paths, read)[0]]
        label = f"migrate {package} {versions}: " + ", ".join(c.qualified for c in applied)
        explanation = f"Migrate to {package} {versions}: " + "; ".join(c.describe() for c in applied)
        proposal = Proposal(
            edits=tuple(edits), explanation=explanation, proposer=PROPOSER, variant=label[:200]
        )
        out.append(MigrationCandidate(label[:200], proposal, tuple(applied), sites))
    return out[:limit]


__all__ = ["MIGRATABLE", "PROPOSER", "MigrationCandidate", "migrate_files", "migration_candidates"]
