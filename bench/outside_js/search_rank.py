"""Search ranking on outside npm packages (issue 30): for each case, the rank of the library file
the bug is in among the hits of the query a failure gives (the failing test's name and assertion
message, with and without the test frame as a hint). Hash embedder (no model download).

    PYTHONPATH=<checkout> python -m bench.outside_js.search_rank PKGROOT   # JSON lines

``PKGROOT`` as for :mod:`bench.outside_js.run` (``<name>-<version>/`` folders). Each package is
copied without ``node_modules`` into a temporary git repository, the case's bug applied, indexed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CASES = Path(__file__).with_name("cases.json")

FAILURES: dict[str, dict[str, Any]] = {
    # What the runner reported for the case (bench/outside_js/parse_after.jsonl).
    "sprintf-hex-radix": {
        "test": "test/test.js::sprintf should return formated strings for simple placeholders",
        "message": "AssertionError: 'ff' == '120'",
        "frame": ("test/test.js", 30),
    },
    "jss-indent": {
        "test": "space parameter",
        "message": "AssertionError: should be strictly equal",
        "frame": ("test/space.js", 12),
    },
}


def _repo(case: dict[str, Any], pkg: Path, dst: Path) -> None:
    shutil.copytree(pkg, dst, ignore=shutil.ignore_patterns("node_modules", ".git"))
    path = dst / case["file"]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(case["original"], case["mutated"], 1), encoding="utf-8")
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "pkg"]):
        subprocess.run(
            cmd,
            cwd=dst,
            check=True,
            env={
                "GIT_AUTHOR_NAME": "b",
                "GIT_AUTHOR_EMAIL": "b@b",
                "GIT_COMMITTER_NAME": "b",
                "GIT_COMMITTER_EMAIL": "b@b",
                "PATH": "/usr/bin:/bin",
            },
        )


def main(pkgroot: Path) -> None:
    from bot.settings import load_settings
    from indexing.index import RepoIndex
    from indexing.model import Location, Query

    spec = json.loads(CASES.read_text(encoding="utf-8"))
    for case in spec["cases"]:
        failure = FAILURES.get(case["id"])
        if failure is None:
            continue
        version = spec["packages"][case["package"]]["version"]
        with tempfile.TemporaryDirectory() as tmp:
            repo = Path(tmp) / case["package"]
            _repo(case, pkgroot / f"{case['package']}-{version}", repo)
            settings = load_settings(
                {"ARCS_HOME": str(Path(tmp) / "home"), "ARCS_EMBEDDER": "hash", "ARCS_INDEX_MODE": "eager"}
            )
            with RepoIndex.open(settings, repo) as index:
                index.refresh()
                retriever = index.retriever()
                text = f"{failure['test']}\n{failure['message']}"
                for with_hint in (False, True):
                    hints = (Location(*failure["frame"]),) if with_hint else ()
                    hits = retriever.search(Query(text=text, k=20, hints=hints))
                    paths = list(dict.fromkeys(h.chunk.path for h in hits))
                    rank = paths.index(case["file"]) + 1 if case["file"] in paths else None
                    print(
                        json.dumps(
                            {"case": case["id"], "hint": with_hint, "file_rank": rank, "top5": paths[:5]}
                        )
                    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
