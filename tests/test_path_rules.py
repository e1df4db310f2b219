"""The gate for the one test-path rule (issue 25, plan-25 §1.6): what it says of every known path.

:func:`indexing.languages.is_test_path` is the only rule that decides "is this test code" (retriever,
tier-0, gates, behaviour, change context, callees, the spectrum ranking, the frames of a failure).
Until #25 four rules did; where they disagreed (30 of 4,689 known paths) the switch settled it: a
JUnit ``*Test.java`` and a ``conftest.py`` are test code, a ``go_test.json`` log is not, and Go's own
``src/testing/testing.go`` in a frame is the framework, not the tests. The class of every path the
benchmarks and tests know is recorded in ``tests/fixtures/test_paths_golden.txt``: a class that moves
would move evidence labels, prompts and so recorded fingerprints.

The paths: every file under the bench corpora, ``tests/fixtures`` and ``bot/samples``, and every
path-like token inside them (frames of recorded outputs, case files, logs), each with all of its
suffixes (any folder may be a repository's root, and frames are absolute paths).

Regenerate (only for new corpus files; a changed class is a behaviour change to review):
``python -m tests.test_path_rules --write``.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from indexing.languages import is_test_path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "fixtures" / "test_paths_golden.txt"
TREES = ("bench", "tests/fixtures", "bot/samples")
PACKAGES = ("bot", "jobs", "runners", "indexing")
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
    for name in found:
        parts = [p for p in name.split("/") if p]
        out.update("/".join(parts[i:]) for i in range(len(parts)))
    return sorted(p for p in out if p)


def classes(path: str) -> str:
    """The rule's class of ``path``: ``1`` test code, ``0`` not."""
    return "1" if is_test_path(path) else "0"


def render(paths: Iterable[str]) -> str:
    """The golden file's text."""
    head = [
        "# What the test-path rule (indexing.languages.is_test_path) says of each known path",
        "# (tests/test_path_rules.py; regenerate with `python -m tests.test_path_rules --write`).",
        "# 1 = test code, then the path.",
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


def test_the_rule_gives_every_known_path_its_recorded_class() -> None:
    golden = read_golden()
    assert len(golden) > 1000, "the golden file lost its paths"
    moved = [f"{want} -> {classes(p)} {p}" for p, want in golden.items() if classes(p) != want]
    assert not moved, f"{len(moved)} path(s) changed class:\n" + "\n".join(moved[:50])


def test_the_golden_holds_both_classes_and_the_settled_disagreements() -> None:
    golden = read_golden()
    assert set(golden.values()) == {"0", "1"}, "the golden cannot show a class moving either way"
    # Where the four rules before #25 disagreed, as settled.
    assert golden["com/example/CalcTest.java"] == "1"
    assert golden["fix/conftest.py"] == "1"
    assert golden["src/testing/testing.go"] == "0"
    assert golden["outputs/go_test.json"] == "0"
    assert golden["tests/fixtures/tier0/off_by_one_go/stats/summary.go"] == "1"


_PREDICATE = re.compile(r"^_?(is_test(_path|_file)?|looks_like_test)$")
_RULE_NAME = re.compile(r"^_?TEST_(PATH|FILE|DIRS)\w*$")


def test_no_second_test_path_rule_in_the_product() -> None:
    # A predicate or a path regex named like one, anywhere but the one rule's module.
    found: list[str] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "indexing/languages.py" or "samples" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef) and _PREDICATE.match(node.name):
                    found.append(f"{rel}: def {node.name}")
                if isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                    found += [f"{rel}: {n} =" for n in names if _RULE_NAME.match(n)]
    assert not found, "a second test-path rule (use indexing.languages.is_test_path):\n" + "\n".join(found)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_path_rules --write")
    GOLDEN.write_text(render(known_paths()), encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(ROOT)}")
