"""Loading the localization corpus: repositories, cases and the symbol tables of their files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from bench.localization.symbols import Symbol, extract_symbols

HERE = Path(__file__).resolve().parent
REPOS_DIR = HERE / "repos"
CASES_SRC_DIR = HERE / "cases"
CASES_FILE = HERE / "cases.jsonl"

CaseKind = Literal["traceback", "ci_log", "issue"]


@dataclass(frozen=True, slots=True)
class Case:
    """One localization case: a query text and the function that must change."""

    id: str
    repo: str
    kind: CaseKind
    query: str
    expected_path: str
    expected_symbol: str
    hints: tuple[tuple[str, int], ...] = ()
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The JSONL record (see README.md for the schema)."""
        record: dict[str, Any] = {
            "id": self.id,
            "repo": self.repo,
            "kind": self.kind,
            "query": self.query,
            "hints": [{"path": p, "line": line} for p, line in self.hints],
            "expected": {"path": self.expected_path, "symbol": self.expected_symbol},
        }
        if self.note:
            record["note"] = self.note
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Case:
        """Inverse of :meth:`as_json`."""
        return cls(
            id=record["id"],
            repo=record["repo"],
            kind=record["kind"],
            query=record["query"],
            expected_path=record["expected"]["path"],
            expected_symbol=record["expected"]["symbol"],
            hints=tuple((h["path"], int(h["line"])) for h in record.get("hints", [])),
            note=record.get("note", ""),
        )


def load_cases(path: Path = CASES_FILE) -> list[Case]:
    """All cases from ``cases.jsonl``."""
    with path.open(encoding="utf-8") as fh:
        return [Case.from_json(json.loads(line)) for line in fh if line.strip()]


def repo_names() -> list[str]:
    """The corpus repositories (folders under ``repos/``)."""
    return sorted(p.name for p in REPOS_DIR.iterdir() if p.is_dir())


def repo_files(repo: str) -> list[str]:
    """Repository-relative POSIX paths of every file in a corpus repository."""
    root = REPOS_DIR / repo
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@cache
def file_symbols(repo: str, path: str) -> tuple[Symbol, ...]:
    """Functions and methods of one corpus file (see :mod:`bench.localization.symbols`)."""
    text = (REPOS_DIR / repo / path).read_text(encoding="utf-8")
    return tuple(extract_symbols(path, text))


@cache
def file_lines(repo: str, path: str) -> tuple[str, ...]:
    """The lines of one corpus file."""
    return tuple((REPOS_DIR / repo / path).read_text(encoding="utf-8").splitlines())


def find_symbol(repo: str, path: str, name: str) -> Symbol | None:
    """The symbol called exactly ``name`` (``Type.method`` or ``func``) in a file, if any."""
    for sym in file_symbols(repo, path):
        if sym.name == name:
            return sym
    return None
