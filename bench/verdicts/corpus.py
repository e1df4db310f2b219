"""The verdict bench's packages (issue #23): pinned PyPI sdists never used in ``bench/`` before.

Each is fetched once with ``pip download --no-binary :all: --no-deps`` into the outside corpus's
git-ignored cache (``bench/outside/.cache``, hash-checked) and materialized per case as a git
repository (:func:`materialize_repo`): commit 1 is the package (plus, in the ``pre`` modes, one test
that fails for a reason outside the code: a service that is not configured), commit 2 the injected
bug. ``--since HEAD~1`` therefore names a known-good baseline in which that test already failed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from bench.outside.corpus import Package, apply_mutation, unpacked

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.jsonl"

PACKAGES: tuple[Package, ...] = (
    Package(
        "cachetools",
        "5.5.2",
        "1a661caa9175d26759571b2e19580f9d6393969e5dfca11fdb1f947a23e640d4",
        {
            "src/cachetools/__init__.py": "tests",
            "src/cachetools/keys.py": "tests",
            "src/cachetools/func.py": "tests",
        },
        pytest_args="-o pythonpath=src",
    ),
    Package(
        "webcolors",
        "24.11.1",
        "ecb3d768f32202af770477b8b65f318fa4f566c22948673a977b00d589dd80f6",
        {
            "src/webcolors/_conversion.py": "tests",
            "src/webcolors/_normalization.py": "tests",
            "src/webcolors/_html5.py": "tests",
        },
        pytest_args="-o pythonpath=src",
    ),
    Package(
        "jmespath",
        "1.0.1",
        "90261b206d6defd58fdd5e85f478bf633a2901798906be2ad389150c5c60edbe",
        {"jmespath/functions.py": "tests", "jmespath/visitor.py": "tests", "jmespath/lexer.py": "tests"},
    ),
)
BY_NAME = {p.name: p for p in PACKAGES}

PRE_EXISTING_TEST = "tests/test_zz_service.py"
PRE_EXISTING_ID = "tests/test_zz_service.py::test_needs_the_reporting_service"
PRE_EXISTING_TEXT = (
    '"""Needs a service this environment does not have (fails before and after the bug)."""\n'
    "import os\n\n\n"
    "def test_needs_the_reporting_service():\n"
    "    assert os.environ.get('REPORTING_SERVICE_URL'), 'REPORTING_SERVICE_URL is not configured'\n"
)

MODES = ("plain", "pre", "pre_since")
"""``plain``: the bug alone, no ``--since``; ``pre``: the bug plus a test that already failed
before it, no ``--since`` (no known-good baseline: ``partial`` is impossible); ``pre_since``: the
same with ``--since HEAD~1`` (the known-good baseline proves that test failing there too)."""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def materialize_repo(case: dict[str, Any], dest: Path, *, buggy: bool = True) -> Path:
    """The case's git repository in ``dest`` (see the module docstring); ``buggy=False`` stops
    after commit 1 (the known-good tree)."""
    pkg = BY_NAME[case["package"]]
    shutil.copytree(unpacked(pkg), dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    if case["mode"] in ("pre", "pre_since"):
        (dest / PRE_EXISTING_TEST).write_text(PRE_EXISTING_TEXT, encoding="utf-8")
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-qm", f"{pkg.name} {pkg.version}")
    if buggy:
        apply_mutation(dest, case["mutation"])
        _git(dest, "commit", "-qam", "a change")
    return dest


__all__ = [
    "BY_NAME",
    "CASES",
    "MODES",
    "PACKAGES",
    "PRE_EXISTING_ID",
    "materialize_repo",
]
