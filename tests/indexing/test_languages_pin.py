"""Pins indexing/languages.json against the three tables it replaced (#12).

Until then the indexer (indexing/languages.py ``_BY_SUFFIX``), the syntax gate (jobs/repair/gates.py
``_LANGUAGE_BY_SUFFIX``) and tier 0 (proposers/symbols.py ``_EXTENSIONS``) each had their own table,
and they had drifted. Every suffix any of them mapped must give the same language now, except for the
deliberate changes listed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from indexing.languages import language_for_path, languages
from jobs.repair.gates import language_of
from jobs.repair.tier0.symbols import language_for

_JS = {".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript"}
_TS = {".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx"}
_OTHER = {".go": "go", ".rs": "rust", ".java": "java"}

OLD_INDEXING: Mapping[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    **_JS,
    **_TS,
    **_OTHER,
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
}
OLD_GATES: Mapping[str, str] = {".py": "python", ".pyi": "python", **_JS, **_TS, **_OTHER}
OLD_SYMBOLS: Mapping[str, str] = {".py": "python", **_JS, **_TS, **_OTHER}

# suffix -> (old language, new language): the only differences allowed.
DELIBERATE_INDEXING: Mapping[str, tuple[str | None, str | None]] = {}
DELIBERATE_GATES: Mapping[str, tuple[str | None, str | None]] = {
    ".pyw": (None, "python"),  # a Windows script is Python: its syntax is checked now
}
DELIBERATE_SYMBOLS: Mapping[str, tuple[str | None, str | None]] = {
    ".pyw": (None, "python"),  # its definitions join the symbol table
    # .pyi stays out on purpose: stubs are declaration files like .d.ts (exclusions.symbols)
}

SUFFIXES = sorted(
    {*OLD_INDEXING, *OLD_GATES, *OLD_SYMBOLS, *(s for lang in languages().values() for s in lang.suffixes)}
)


def _diff(
    now: Callable[[str], str | None], old: Mapping[str, str]
) -> dict[str, tuple[str | None, str | None]]:
    """suffix -> (old, new) for every suffix of any table where ``now`` disagrees with ``old``."""
    pairs = {s: (old.get(s), now(f"pkg/file{s}")) for s in SUFFIXES}
    return {s: pair for s, pair in pairs.items() if pair[0] != pair[1]}


def test_indexing_table_is_unchanged() -> None:
    # (the indexer also maps text suffixes to "text": tests/indexing/test_files.py pins those)
    changed = {s: (OLD_INDEXING[s], language_for_path(f"pkg/file{s}")) for s in OLD_INDEXING}
    assert {s: pair for s, pair in changed.items() if pair[0] != pair[1]} == DELIBERATE_INDEXING


@pytest.mark.parametrize(
    ("name", "now", "old", "deliberate"),
    [
        ("gates", language_of, OLD_GATES, DELIBERATE_GATES),
        ("symbols", language_for, OLD_SYMBOLS, DELIBERATE_SYMBOLS),
    ],
)
def test_code_tables_change_only_deliberately(
    name: str,
    now: Callable[[str], str | None],
    old: Mapping[str, str],
    deliberate: Mapping[str, tuple[str | None, str | None]],
) -> None:
    assert _diff(now, old) == deliberate, name


@pytest.mark.parametrize(
    ("path", "indexing", "gates", "symbols"),
    [
        ("types/index.d.ts", "typescript", "typescript", None),  # declarations: no symbols, as before
        ("stubs/mod.pyi", "python", "python", None),
        ("Main.PY", "python", "python", "python"),  # suffixes are matched case-insensitively
        ("dist/app.min.js", None, "javascript", "javascript"),  # not indexed, still code
        ("README.md", "markdown", None, None),
        ("Makefile", "text", None, None),
    ],
)
def test_paths(path: str, indexing: str | None, gates: str | None, symbols: str | None) -> None:
    assert (language_for_path(path), language_of(path), language_for(path)) == (indexing, gates, symbols)
