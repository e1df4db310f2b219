"""Child process of ``bench.structure.run``: which product modules run during ``arcs fix --tier 0``.

Copies the bundled inventory sample (one one-line bug, ``inventory/stock.py``) into a fresh git
repository, runs ``arcs fix PATH --tier 0`` in this process (``bot.cli.main``, the same entry point
as the console script) under :func:`sys.setprofile` on every thread, and prints one JSON line:

* ``modules_code``: product modules any of whose code ran, module bodies included (the count the
  issue quotes: importing a module runs its body);
* ``modules_functions``: product modules one of whose *functions* ran (code objects with
  ``CO_OPTIMIZED``: functions, methods, lambdas, comprehensions; not module or class bodies);
* ``modules_imported``: product modules in ``sys.modules`` at the end;
* the CLI's exit code and its stderr's first lines (the verdict must be ``FIXED``).

Run it from a checkout with ``PYTHONPATH=<checkout>`` so that the code measured is that checkout's.

    python -m bench.structure.profile_fix [--unsafe-no-sandbox]
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

PACKAGES = ("bot", "jobs", "indexing", "runners")
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "bot" / "samples" / "inventory"


def _git(repo: Path, *args: str) -> None:
    import subprocess

    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def main(argv: list[str]) -> int:
    """Profile one ``arcs fix --tier 0`` of the inventory sample; print the JSON line."""
    extra = [a for a in argv if a == "--unsafe-no-sandbox"]
    scratch = Path(tempfile.mkdtemp(prefix="arcs-structure-"))
    repo = scratch / "inv"
    shutil.copytree(SAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "init")
    home = scratch / "home"
    os.environ["ARCS_HOME"] = str(home)
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ.pop("ARCS_ANTHROPIC_API_KEY", None)

    code_ran: set[str] = set()
    functions_ran: set[str] = set()
    optimized = inspect.CO_OPTIMIZED

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        name = frame.f_globals.get("__name__", "")
        if not isinstance(name, str) or name.split(".")[0] not in PACKAGES:
            return
        code_ran.add(name)
        if frame.f_code.co_flags & optimized:
            functions_ran.add(name)

    err = io.StringIO()
    rc: int | str | None = 0
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        from bot.cli import main as cli_main

        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = cli_main(["fix", str(repo), "--tier", "0", *extra])
            except SystemExit as exc:
                rc = exc.code
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    imported = sorted(m for m in sys.modules if m.split(".")[0] in PACKAGES)
    outside = [m for m in imported if not _file_in_root(m)]
    result = {
        "command": f"arcs fix <inventory sample> --tier 0 {' '.join(extra)}".strip(),
        "rc": rc,
        "output": err.getvalue().splitlines()[:4],
        "modules_code": sorted(code_ran),
        "modules_functions": sorted(functions_ran),
        "modules_imported": imported,
        "not_from_this_checkout": outside,
    }
    shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(result))
    return 0


def _file_in_root(module: str) -> bool:
    mod = sys.modules.get(module)
    path = getattr(mod, "__file__", None)
    return bool(path) and Path(str(path)).resolve().is_relative_to(ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
