"""Which language a repository file is in, the tree-sitter grammars of the code languages, and what
counts as test code.

The one table is ``languages.json`` next to this module (suffixes, kind, family, grammar, exclusions),
read on first use: the indexer, the syntax gate and tier 0 all ask here, so they cannot drift apart.
Detection is by file name only (extension, or a few well-known extensionless names), so it is cheap
and deterministic. ``None`` means "not worth indexing" (images, archives, lock files, data dumps…).

This module is a pure leaf of the repair core (no processes, no environment): keep it that way.
"""

from __future__ import annotations

import importlib
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal, cast

if TYPE_CHECKING:
    import tree_sitter

__all__ = [
    "Kind",
    "Language",
    "Purpose",
    "code_language",
    "code_languages",
    "doc_languages",
    "family",
    "family_members",
    "grammar",
    "is_test_path",
    "language_for_path",
    "languages",
    "parser_for",
]

Kind = Literal["code", "doc", "text"]
Purpose = Literal["syntax", "symbols"]
"""Who asks :func:`code_language`: ``syntax`` (every file of a code language) or ``symbols`` (tier 0's
symbol tables, which skip the ``exclusions.symbols`` of the table: declaration files)."""

_DATA = Path(__file__).with_name("languages.json")


@dataclass(frozen=True, slots=True)
class Language:
    """One entry of ``languages.json``."""

    name: str
    kind: Kind
    family: str
    """Languages of one family share a module system and a symbol space (TypeScript imports JavaScript)."""
    suffixes: tuple[str, ...]
    grammar_module: str = ""
    """The tree-sitter grammar wheel (code languages only) and the function returning its pointer."""
    grammar_function: str = ""


@dataclass(frozen=True, slots=True)
class _Table:
    languages: Mapping[str, Language]
    by_suffix: Mapping[str, str]
    text_names: frozenset[str]
    skip_names: frozenset[str]
    skip_endings: tuple[str, ...]
    exclusions: Mapping[str, tuple[str, ...]]


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"languages.json: {where} must be a list of strings")
    return tuple(cast("list[str]", value))


@cache
def _table() -> _Table:
    raw = json.loads(_DATA.read_text(encoding="utf-8"))
    languages: dict[str, Language] = {}
    by_suffix: dict[str, str] = {}
    text_names: tuple[str, ...] = ()
    for name, entry in raw["languages"].items():
        kind = entry["kind"]
        if kind not in ("code", "doc", "text"):
            raise ValueError(f"languages.json: {name}: unknown kind {kind!r}")
        grammar_ = entry.get("grammar", {})
        if (kind == "code") != bool(grammar_):
            raise ValueError(f"languages.json: {name}: a grammar is required for code and only for code")
        suffixes = _strings(entry["suffixes"], f"{name}.suffixes")
        languages[name] = Language(
            name=name,
            kind=kind,
            family=str(entry["family"]),
            suffixes=suffixes,
            grammar_module=str(grammar_.get("module", "")),
            grammar_function=str(grammar_.get("function", "")),
        )
        for suffix in suffixes:
            if suffix in by_suffix:
                raise ValueError(f"languages.json: {suffix} is listed for {by_suffix[suffix]} and {name}")
            by_suffix[suffix] = name
        if kind == "text":
            text_names += _strings(entry.get("names", []), f"{name}.names")
    return _Table(
        languages=languages,
        by_suffix=by_suffix,
        text_names=frozenset(text_names),
        skip_names=frozenset(_strings(raw["skip"]["names"], "skip.names")),
        skip_endings=_strings(raw["skip"]["endings"], "skip.endings"),
        exclusions={k: _strings(v["endings"], f"exclusions.{k}") for k, v in raw["exclusions"].items()},
    )


def languages() -> Mapping[str, Language]:
    """Every language of the table, by name."""
    return _table().languages


@cache
def code_languages() -> frozenset[str]:
    """Languages parsed along their syntax tree (each has a grammar wheel)."""
    return frozenset(n for n, lang in _table().languages.items() if lang.kind == "code")


@cache
def doc_languages() -> frozenset[str]:
    """Languages chunked by section heading."""
    return frozenset(n for n, lang in _table().languages.items() if lang.kind == "doc")


def family(language: str) -> str:
    """The family of ``language`` (``javascript`` for TypeScript and TSX); the name itself when unknown."""
    entry = _table().languages.get(language)
    return entry.family if entry is not None else language


@cache
def family_members(language: str) -> frozenset[str]:
    """The code languages of ``language``'s family (``{language}`` alone when it has none)."""
    own = family(language)
    members = {n for n, lang in _table().languages.items() if lang.family == own and lang.kind == "code"}
    return frozenset(members | {language})


def language_for_path(path: str) -> str | None:
    """The language of ``path`` (repo-relative, POSIX), or ``None`` when it is not indexable.

    Code languages are those of :func:`code_languages`; ``markdown``/``rst`` documents are chunked by
    section; ``text`` covers other useful text (configuration, README, build files, and source in
    languages without a grammar), which is chunked by line windows.
    """
    table = _table()
    lower = PurePosixPath(path).name.lower()
    if not lower or lower in table.skip_names or lower.endswith(table.skip_endings):
        return None
    suffix = PurePosixPath(lower).suffix
    if suffix in table.by_suffix:
        return table.by_suffix[suffix]
    if lower in table.text_names:
        return "text"
    stem = lower.split(".", 1)[0]
    if stem in table.text_names and stem not in {".gitignore", ".dockerignore"}:
        # README.txt is handled above; this catches Dockerfile.dev, Makefile.am, CHANGES.old …
        return "text"
    if lower.startswith(("requirements", "constraints")) and suffix in {".txt", ".in", ""}:
        return "text"
    return None


def code_language(path: str, *, purpose: Purpose = "syntax") -> str | None:
    """The code language of ``path`` by its suffix alone, or ``None`` (documents, text, unknown).

    Unlike :func:`language_for_path` nothing is skipped as noise (a ``.min.js`` is still JavaScript);
    for ``purpose="symbols"`` the table's ``exclusions.symbols`` (declaration files) give ``None``.
    """
    table = _table()
    lower = PurePosixPath(path).name.lower()
    if lower.endswith(table.exclusions.get(purpose, ())):
        return None
    language = table.by_suffix.get(PurePosixPath(lower).suffix)
    if language is None or table.languages[language].kind != "code":
        return None
    return language


@cache
def grammar(language: str) -> tree_sitter.Language:
    """The tree-sitter grammar for a code language (loaded once). Raises KeyError for others."""
    entry = _table().languages.get(language)
    if entry is None or entry.kind != "code":
        raise KeyError(f"no tree-sitter grammar for {language!r}")
    # Imported lazily: no grammar (nor tree-sitter) is loaded unless a file of that language is parsed.
    import tree_sitter

    module = importlib.import_module(entry.grammar_module)
    return tree_sitter.Language(getattr(module, entry.grammar_function)())


_local = threading.local()


def parser_for(language: str) -> tree_sitter.Parser:
    """A parser for ``language``, cached per thread (parsers are not safe to share across threads)."""
    parsers: dict[str, tree_sitter.Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = {}
        _local.parsers = parsers
    parser = parsers.get(language)
    if parser is None:
        import tree_sitter

        parser = tree_sitter.Parser(grammar(language))
        parsers[language] = parser
    return parser


# The one definition of "test code" for the whole project: the retriever down-weights it, tier-0
# localization skips it, and the policy gate protects it from weakening.
_TEST_DIRS = frozenset(
    {"test", "tests", "__tests__", "testing", "spec", "specs", "testdata", "test_data", "e2e"}
)
_TEST_FILE = re.compile(
    r"""^(
        test_.*\.py | .*_tests?\.py | conftest\.py
      | .*_test\.go
      | .*\.(test|spec)\.[cm]?[jt]sx? | .*\.spec\.\w+
      | .*(Test|Tests|IT)\.(java|kt) | Test.*\.java
      | .*_(test|spec)\.rb
      | tests?\.rs
    )$""",
    re.VERBOSE,
)


def is_test_path(rel: str) -> bool:
    """True when ``rel`` looks like test code: under a ``tests/``-like directory (``src/test/``,
    ``__tests__/``, ``spec/``, ``testdata/``…) or named like a test file (``test_*.py``, ``*_test.go``,
    ``*.test.ts``, ``*.spec.js``, ``*Test.java``, ``*_spec.rb``…). The one test-path rule of the
    project (tests/test_path_rules.py keeps it so)."""
    parts = rel.replace("\\", "/").split("/")
    dirs = parts[:-1]
    if parts[-1].endswith(".go"):
        # A `testing/` folder is Go's own test framework (`src/testing/testing.go` in a frame).
        dirs = [d for d in dirs if d != "testing"]
    if any(d.lower() in _TEST_DIRS for d in dirs):
        return True
    return bool(_TEST_FILE.match(parts[-1]))
