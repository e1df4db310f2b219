"""Where a dependency's breaking changes hit the repository (issue #27, item 4). Pure.

For each removed, renamed or moved name of an API difference, the repository's Python files are
searched with :mod:`ast` for its uses: ``from module import name`` and ``module.name`` through
an ``import module [as alias]``. The result names symbol, call sites and the changelog line, for
the comment ARCS leaves when no fix verified, and the names the prompt section puts first.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.depupdate.changelog import Section, mentioning

MAX_FILE_CHARS = 500_000
MAX_SITES = 20


@dataclass(frozen=True, slots=True)
class Hit:
    """One breaking change the repository uses."""

    change: ApiChange
    sites: tuple[tuple[str, int], ...]
    """(path, line) of each use, at most :data:`MAX_SITES`."""
    changelog: tuple[str, ...] = ()


def _module_aliases(tree: ast.Module, module: str) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name == module:
                    out.add(a.asname)
                elif not a.asname and (
                    a.name == module or a.name.startswith(module + ".") or module.startswith(a.name + ".")
                ):
                    out.add(module)
    return out


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def uses(tree: ast.Module, change: ApiChange) -> list[int]:
    """Lines of ``tree`` that use the (non-keyword) change's name."""
    if change.keyword or not change.name or "." in change.name:
        return []
    lines: list[int] = []
    aliases = _module_aliases(tree, change.module)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == change.module:
            lines += [node.lineno for a in node.names if a.name == change.name]
        elif isinstance(node, ast.Attribute) and node.attr == change.name and _dotted(node.value) in aliases:
            lines.append(node.lineno)
    return sorted(set(lines))


def hits(
    changes: Sequence[ApiChange],
    paths: Iterable[str],
    read: Callable[[str], str | None],
    changelog: Sequence[Section] = (),
) -> list[Hit]:
    """The breaking changes the repository's Python files use, with their sites."""
    wanted = [c for c in changes if not c.keyword and c.name and "." not in c.name]
    tops = {c.module.split(".")[0] for c in wanted}
    found: dict[ApiChange, list[tuple[str, int]]] = {}
    for path in sorted(set(paths)):
        if not path.endswith(".py"):
            continue
        text = read(path)
        if text is None or len(text) > MAX_FILE_CHARS or not any(t in text for t in tops):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for c in wanted:
            found.setdefault(c, []).extend((path, line) for line in uses(tree, c))
    return [
        Hit(c, tuple(sites[:MAX_SITES]), tuple(mentioning(changelog, [c.name])))
        for c, sites in found.items()
        if sites
    ]


__all__ = ["Hit", "hits", "uses"]
