"""Call distance of a mutant: how many calls separate a failing test from the mutated code.

The case's test command is run directly (no ARCS) on the mutated tree with a small pytest plugin
(:data:`PLUGIN`) that profiles each test's call phase: whenever a code object containing the
mutated line is entered, it counts the frames of the repository between it and the test function
(test helpers included, the standard library and pytest not). Distance 1: the test calls the
mutated function itself; 2: through one function of the repository; and so on. The case's
distance is the smallest over its failing tests (None: the mutated code ran in no failing test's
call, e.g. only in a fixture or at import).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from bench.repair.isolate import direct_env, run_command

PLUGIN = r"""
import json, os, sys
import pytest

_FILE = os.path.realpath(os.environ["ARCS_DIST_FILE"])
_LINE = int(os.environ["ARCS_DIST_LINE"])
_ROOT = os.path.realpath(os.environ["ARCS_DIST_ROOT"]) + os.sep
_OUT = os.environ["ARCS_DIST_OUT"]
_best = {}
_failed = set()
_hit = {}


def _contains(code):
    got = _hit.get(code)
    if got is None:
        got = os.path.realpath(code.co_filename) == _FILE and any(
            line == _LINE for _, _, line in code.co_lines()
        )
        _hit[code] = got
    return got


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    obj = getattr(item, "obj", None)
    obj = getattr(obj, "__func__", obj)
    test_code = getattr(obj, "__code__", None)
    best = [None]

    def prof(frame, event, arg):
        if event != "call" or not _contains(frame.f_code):
            return
        hops, f = 1, frame.f_back
        while f is not None and f.f_code is not test_code:
            if os.path.realpath(f.f_code.co_filename).startswith(_ROOT):
                hops += 1
            f = f.f_back
        if f is not None and (best[0] is None or hops < best[0]):
            best[0] = hops

    sys.setprofile(prof)
    try:
        yield
    finally:
        sys.setprofile(None)
        if best[0] is not None:
            _best[item.nodeid] = best[0]


def pytest_runtest_logreport(report):
    if report.failed:
        _failed.add(report.nodeid)


def pytest_sessionfinish(session):
    dists = [d for n, d in _best.items() if n in _failed]
    with open(_OUT, "w") as f:
        json.dump({"distance": min(dists) if dists else None, "failed": sorted(_failed),
                   "per_test": {n: _best.get(n) for n in sorted(_failed)}}, f)
"""


def call_distance(
    repo: Path, command: str, path: str, line: int, timeout_s: float = 120.0
) -> dict[str, object]:
    """``{distance, failed, per_test}`` of the mutant at ``path:line`` in ``repo`` (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="arcs-dist-") as tmp:
        base = Path(tmp)
        (base / "plugdir").mkdir()
        (base / "plugdir" / "arcs_calldist.py").write_text(PLUGIN, encoding="utf-8")
        out = base / "dist.json"
        env = direct_env(base)
        env.update(
            PYTHONPATH=os.pathsep.join([str(base / "plugdir"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            ARCS_DIST_FILE=str(repo / path),
            ARCS_DIST_LINE=str(line),
            ARCS_DIST_ROOT=str(repo),
            ARCS_DIST_OUT=str(out),
        )
        # Fail-fast flags would stop at the first failure: the distance wants every failing test.
        cmd = command.replace(" -x ", " ").replace(" --maxfail=1 ", " ")
        code, _, tail = run_command(f"{cmd} -p arcs_calldist", repo, env, timeout_s)
        if not out.is_file():
            return {"distance": None, "failed": [], "per_test": {}, "error": f"exit {code}: {tail[-300:]}"}
        data: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
        return data
