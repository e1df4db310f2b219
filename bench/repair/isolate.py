"""Running one case in its own process with a hard cap, and re-checking a verdict outside the loop.

* :func:`run_isolated` runs ``python -m bench.repair.run --one ID`` in a child process (same
  interpreter, same environment, so a ``PYTHONPATH`` that selects another copy of the code is
  kept) and waits at most ``cap_s``. A case that hangs the loop, crashes the interpreter or raises
  becomes a record with verdict ``no_verdict`` or ``error`` and a clear reason; the bench goes on.
  On the cap the whole process tree is killed, found through ``/proc`` (the sandboxed test runs
  live in their own sessions, so a process-group kill would miss them).
* :func:`recheck` applies a returned patch to a fresh copy of the case and runs the exact test
  command as CI would: a plain subprocess, the virtual environment's ``bin`` first on ``PATH``,
  no sandbox and no ARCS code involved, with a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.repair.corpus import Case, copy_case

Record = dict[str, Any]

RECHECK_TIMEOUT_S = 120.0


def direct_env(home: Path) -> dict[str, str]:
    """The environment of a test command run outside ARCS: the venv's ``bin`` first on ``PATH``."""
    venv_bin = Path(sys.prefix) / "bin"
    return {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "CI": "true",
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (breadth first)."""
    kids = _children()
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def kill_tree(pid: int) -> int:
    """SIGKILL ``pid`` and every descendant; returns how many processes were signalled."""
    pids = process_tree(pid)
    for p in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
    return len(pids)


def run_command(
    command: str, cwd: Path, env: dict[str, str], timeout_s: float
) -> tuple[int | None, float, str]:
    """``(exit code or None on timeout, seconds, last 2000 characters of output)``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, _ = proc.communicate()
        code = None
    return code, time.perf_counter() - start, (out or "")[-2000:]


def recheck(case: Case, patch: str, timeout_s: float = RECHECK_TIMEOUT_S) -> Record:
    """Apply ``patch`` to a fresh copy of ``case`` and run its exact test command outside ARCS.

    Returns ``recheck_exit`` (None: timed out or the patch did not apply), ``recheck_s``,
    ``recheck_tail`` and ``recheck_error``.
    """
    with tempfile.TemporaryDirectory(prefix=f"arcs-recheck-{case.id}-") as tmp:
        base = Path(tmp)
        repo = copy_case(case, base / "repo")
        if patch.strip():
            done = subprocess.run(
                ["git", "apply", "--whitespace=nowarn", "-"],
                cwd=repo,
                input=patch,
                text=True,
                capture_output=True,
                check=False,
            )
            if done.returncode != 0:
                return {
                    "recheck_exit": None,
                    "recheck_s": 0.0,
                    "recheck_tail": "",
                    "recheck_error": f"the patch does not apply to a fresh copy: {done.stderr.strip()[:300]}",
                }
        code, seconds, tail = run_command(case.test_command, repo, direct_env(base), timeout_s)
        return {
            "recheck_exit": code,
            "recheck_s": round(seconds, 3),
            "recheck_tail": tail[-600:],
            "recheck_error": "" if code is not None else f"timed out after {timeout_s:g} s",
        }


def run_isolated(case: Case, mode: str, extra_args: Sequence[str], cap_s: float) -> Record:
    """Run one case in a child ``bench.repair.run --one`` process; never raises for a case's failure."""
    with tempfile.TemporaryDirectory(prefix=f"arcs-bench-one-{case.id}-") as tmp:
        out = Path(tmp) / "record.json"
        argv = [
            sys.executable,
            "-m",
            "bench.repair.run",
            "--one",
            case.id,
            "--one-mode",
            mode,
            "--one-out",
            str(out),
            *extra_args,
        ]
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            _, err = proc.communicate(timeout=cap_s)
        except subprocess.TimeoutExpired:
            killed = kill_tree(proc.pid)
            proc.communicate()
            wall = time.perf_counter() - start
            return _base_record(case) | {
                "fixed": False,
                "verdict": "no_verdict",
                "reason": f"no verdict within the bench's cap of {cap_s:g} s (killed {killed} processes)",
                "why": f"no_verdict: the loop had not returned after {cap_s:g} s",
                "wall_s": round(wall, 3),
                "capped": True,
                "rounds": 0,
                "candidates": 0,
                "executions": 0,
            }
        wall = time.perf_counter() - start
        if proc.returncode == 0 and out.is_file():
            record: Record = json.loads(out.read_text(encoding="utf-8"))
            record["process_wall_s"] = round(wall, 3)
            return record
        tail = (err or "").strip().splitlines()[-12:]
        return _base_record(case) | {
            "fixed": False,
            "verdict": "error",
            "reason": f"the case process exited {proc.returncode}: " + " | ".join(tail)[-800:],
            "why": "error: " + (tail[-1] if tail else f"exit {proc.returncode}"),
            "wall_s": round(wall, 3),
            "rounds": 0,
            "candidates": 0,
            "executions": 0,
        }


def _base_record(case: Case) -> Record:
    return {
        "id": case.id,
        "language": case.language,
        "bug_class": case.bug_class,
        "test_command": case.test_command,
        "corpus": case.corpus,
        "group": case.group,
        "tags": list(case.tags),
        "split": case.split,
        "expect_verdict": case.expect_verdict,
    }


def case_facts(case: Case) -> Record:
    """The corpus facts every record carries (group, tags, split, expected verdict)."""
    return _base_record(case)
