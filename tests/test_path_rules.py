"""The gate for one test-path rule (issue 25, plan-25 §1.6): what every rule says of every known path.

Four rules decide "is this test code" today: :func:`indexing.languages.is_test_path` (retriever,
tier-0, gates, behaviour, change context), :func:`jobs.repair.callees.is_test_file` (callees, the
spectrum ranking), ``jobs.repair.feedback._looks_like_test`` and ``jobs.repair.plan._is_test``
(which frames of a failure are test code). Before callers switch to one rule, the class each rule
gives to each path the benchmarks and tests know is recorded in ``tests/fixtures/test_paths_golden.txt``:
a class that moves would move evidence labels, prompts and so recorded fingerprints.

The paths: every file under the bench corpora, ``tests/fixtures`` and ``bot/samples``, and every
path-like token inside them (frames of recorded outputs, case files, logs), each with all of its
suffixes (any folder may be a repository's root, and frames are absolute paths).

Regenerate (only for new corpus files; a changed class is a behaviour change to review):
``python -m tests.test_path_rules --write``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from indexing.languages import is_test_path
from jobs.repair.callees import is_test_file
from jobs.repair.feedback import _looks_like_test
from jobs.repair.plan import _is_test

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "fixtures" / "test_paths_golden.txt"
TREES = ("bench", "tests/fixtures", "bot/samples")
RULES: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("callees", is_test_file),
    ("feedback", _looks_like_test),
    ("plan", _is_test),
    ("languages", is_test_path),
)
_TOKEN = re.compile(
    r"(?:[\w.@+-]+/)*[\w.@+-]+\."
    r"(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|rb|c|h|cc|cpp|cs|php|swift|scala|sh"
    r"|json|yaml|yml|toml|md|txt|cfg|ini|snap|xml|log)\b"
)
_MAX_BYTES = 5_000_000


def _files(root: Path) -> Iterable[Path]:
    for tree in TREES:
        for path in sorted((root / tree).rglob("*")):
            rel = path.relative_to(root).parts
            if path.is_file() and "__pycache__" not in rel and "results" not in rel and path != GOLDEN:
                yield path


def known_paths(root: Path = ROOT) -> list[str]:
    """Every path (and each of its suffixes) named by a file or inside one, sorted."""
    found: set[str] = set()
    for path in _files(root):
        found.add(path.relative_to(root).as_posix())
        if path.stat().st_size > _MAX_BYTES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found.update(m.group(0).lstrip("./") for m in _TOKEN.finditer(text))
    out: set[str] = set()
    for path in found:
        parts = [p for p in path.split("/") if p]
        out.update("/".join(parts[i:]) for i in range(len(parts)))
    return sorted(p for p in out if p)


def classes(path: str) -> str:
    """One digit per rule of :data:`RULES` (1: test code)."""
    return "".join("1" if rule(path) else "0" for _, rule in RULES)


def render(paths: Iterable[str]) -> str:
    """The golden file's text."""
    head = [
        "# What each test-path rule says of each known path (tests/test_path_rules.py; regenerate with",
        "# `python -m tests.test_path_rules --write`). Digits, 1 = test code, in this order:",
        "# " + " ".join(name for name, _ in RULES) + ", then the path.",
    ]
    return "\n".join([*head, *(f"{classes(p)} {p}" for p in paths)]) + "\n"


def read_golden(path: Path = GOLDEN) -> dict[str, str]:
    """Path -> recorded digits."""
    rows: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            digits, _, rel = line.partition(" ")
            rows[rel] = digits
    return rows


def test_every_rule_gives_every_known_path_its_recorded_class() -> None:
    golden = read_golden()
    assert len(golden) > 1000, "the golden file lost its paths"
    moved = [f"{want} -> {classes(p)} {p}" for p, want in golden.items() if classes(p) != want]
    assert not moved, f"{len(moved)} path(s) changed class (rules: {[n for n, _ in RULES]}):\n" + "\n".join(
        moved[:50]
    )


def test_the_golden_holds_paths_each_rule_calls_test_code_and_paths_it_does_not() -> None:
    golden = read_golden()
    for i, (name, _) in enumerate(RULES):
        column = {digits[i] for digits in golden.values()}
        assert column == {"0", "1"}, f"{name}: the golden cannot show a class moving either way"


def test_the_golden_records_where_the_rules_disagree_today() -> None:
    # What a switch to one rule must settle (plan-25 §1.6): pinned so the list is reviewed, not found.
    golden = read_golden()
    assert golden["com/example/CalcTest.java"] == "0001"  # a JUnit class: only languages says test
    assert golden["src/testing/testing.go"] == "0001"  # Go's own `testing` package in a frame
    assert golden["fix/conftest.py"] == "1001"  # conftest: callees and languages, not the frame rules


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_path_rules --write")
    GOLDEN.write_text(render(known_paths()), encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(ROOT)}")
