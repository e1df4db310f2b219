"""docs/architecture.md stays true: every repository file it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# A path in backticks: at least one slash and a file suffix, or a folder ending in "/".
_PATH = re.compile(r"`([A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)+/?)`")


def named_paths(text: str) -> list[str]:
    """The repository paths written in backticks in ``text``."""
    return sorted({m.group(1) for m in _PATH.finditer(text)})


def test_the_doc_names_files() -> None:
    paths = named_paths(DOC.read_text(encoding="utf-8"))
    assert len(paths) >= 30, paths


def test_every_named_file_exists() -> None:
    missing = [p for p in named_paths(DOC.read_text(encoding="utf-8")) if not (ROOT / p).exists()]
    assert missing == []


def test_the_pattern_finds_a_missing_file() -> None:
    assert named_paths("see `jobs/nosuch.py` and `jobs/repair/`") == ["jobs/nosuch.py", "jobs/repair/"]
