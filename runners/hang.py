"""The hang probe: stop a pytest run early, with frames, when one test hangs.

A run whose test loops forever otherwise costs the whole configured timeout (600 s by default)
before anything is known. The probe is a tiny pytest plugin that ARCS writes into the run's private
folder (:func:`runners.workspace.private_folder`: outside the repository's tree, seen by the command
at ``$ARCS_PRIVATE``; ``hang/`` there) and loads with ``-p``:

* when a test's *call* phase starts, it arms ``faulthandler.dump_traceback_later(limit, exit=True)``
  with ``limit = max(probe_s, ratio x the time the run spent before this test)`` and disarms it
  when the call returns. Fixture setup is not timed (a slow session fixture is not a hang), and a
  test is only called a hang when it alone ran longer than the probe *and* several times longer
  than everything before it, so a legitimately slow suite keeps its configured timeout;
* faulthandler's watchdog is a C thread: it fires even when the test holds the GIL in a busy loop.
  It prints every thread's stack (the frames of the ``timeout`` failure) to the real stderr and
  exits the process;
* every test start and every non-passing (and every call) report is appended to an event log, so
  the tests observed before the hang keep their outcomes although no report file is written;
* a failing subtest does not end its test's call: pytest's own faulthandler plugin cancels every
  pending dump when one fails (``pytest_exception_interact``), so the probe re-arms the test's
  deadline there, and a subtest's report does not count as the test's end;
* per-test limits (:func:`limits_of`, ``limits.json`` next to the plugin, written by
  :func:`write_limits`) replace the ratio rule for the tests they name: measured once on a repair's
  baseline and shared by every later run, they stop a candidate that still hangs after about as
  long as the slowest test that finished (at least 3 s) instead of the ratio rule's 10 s or more.

``node --test`` follows the same rule with a preload and a worker thread (:mod:`runners.hang_node`).

:func:`probe_command` wraps a resolved command (only a plain ``pytest`` command is probed; any
other runner keeps the configured timeout), :func:`install` writes the plugin, and
:func:`read_hang` turns the event log and the dump into a :class:`HangReport`.

The host never touches the repository's ``.arcs/hang`` (a repository can commit it as a symlink to
a host folder): everything lives in the private folder, written through :mod:`runners.wsfs`,
and the event log, which the tests can replace, is read back through it too: no link followed, a
FIFO never waited for, at most the last :data:`EVENTS_CAP` bytes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from runners import wsfs
from runners.base import PRIVATE_ENV
from runners.commands import ResolvedCommand
from runners.results import TestRun

DEFAULT_HANG_PROBE_S = 10.0
"""A test whose call runs longer than this (and :data:`DEFAULT_HANG_RATIO` times everything
before it) is stopped as a hang."""

DEFAULT_HANG_RATIO = 3.0

PROBE_DIR = "hang"
"""The plugin's folder, relative to the run's private folder (``$ARCS_PRIVATE`` in the sandbox)."""

PLUGIN = "arcs_hang_probe"
EVENTS = "events.jsonl"
LIMITS = "limits.json"
"""Per-test limits (``{test id: seconds}``) a run's probe applies instead of the ratio rule."""
EVENTS_CAP = 4 << 20
"""The host reads at most the last 4 MiB of the event log (the hang is at its end)."""

_PLUGIN_SOURCE = '''\
"""ARCS hang probe (written by ARCS into the run's private folder; see runners/hang.py)."""
import faulthandler
import json
import os
import time

import pytest

_T0 = time.monotonic()
_PROBE = float(os.environ.get("ARCS_HANG_PROBE_S") or 0)
_RATIO = float(os.environ.get("ARCS_HANG_RATIO") or 3)
_LOG = os.environ.get("ARCS_HANG_LOG") or ""
try:
    _ERR = os.dup(2)  # the real stderr: pytest captures fd 2 while a test runs
except OSError:
    _ERR = 2
_fd = None
_deadline = None
try:  # per-test limits measured on the baseline (runners/hang.py: limits_of)
    with open(os.environ.get("ARCS_HANG_LIMITS") or "", encoding="utf-8") as _f:
        _LIMITS = {str(k): float(v) for k, v in json.load(_f).items()}
except (OSError, ValueError, TypeError, AttributeError):
    _LIMITS = {}


def _event(**data):
    global _fd
    if not _LOG:
        return
    try:
        if _fd is None:
            _fd = os.open(_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(_fd, (json.dumps(data) + "\\n").encode("utf-8", "replace"))
    except (OSError, ValueError, TypeError):
        pass


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    if _PROBE <= 0:
        yield
        return
    global _deadline
    now = time.monotonic()
    before = now - _T0
    known = _LIMITS.get(item.nodeid)
    limit = known if known else max(_PROBE, _RATIO * before)
    _event(start=item.nodeid, limit_s=round(limit, 3), before_s=round(before, 3), known=bool(known))
    _deadline = now + limit
    faulthandler.dump_traceback_later(limit, exit=True, file=_ERR)
    try:
        yield
    finally:
        _deadline = None
        faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node, call, report):
    # pytest's faulthandler plugin cancels every pending dump here, also for a failing subtest in
    # the middle of a test's call: the test's own deadline stays armed.
    if _deadline is not None:
        left = max(_deadline - time.monotonic(), 0.001)
        faulthandler.dump_traceback_later(left, exit=True, file=_ERR)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.excinfo is not None:
        outcome.get_result()._arcs_type = call.excinfo.typename


def pytest_runtest_logreport(report):
    if report.when != "call" and report.outcome == "passed":
        return
    message = ""
    if report.outcome == "failed":
        lines = [ln for ln in str(report.longreprtext or "").splitlines() if ln.startswith("E ")]
        message = "\\n".join(ln[1:].strip() for ln in lines[:5])
    _event(done=report.nodeid, outcome=report.outcome, when=report.when,
           s=round(report.duration, 4), type=getattr(report, "_arcs_type", ""), message=message[:2000],
           sub=hasattr(report, "context"))
'''

_DUMP = re.compile(r"^Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!\s*$", re.M)
_DUMP_EXITS = frozenset({1, -11, 139})
"""faulthandler's exit status, or SIGSEGV (signal, or 128 + 11 through a shell) during the dump."""
_PYTEST = re.compile(r"(?:^|\s)(?:\S*python[\d.]*\s+-m\s+pytest|\S*pytest|py\.test)(?=\s|$)")


@dataclass(frozen=True, slots=True)
class HangProbe:
    """When the probe calls a test a hang."""

    probe_s: float = DEFAULT_HANG_PROBE_S
    ratio: float = DEFAULT_HANG_RATIO


@dataclass(frozen=True, slots=True)
class Observed:
    """One test the probe saw finish before the hang."""

    id: str
    outcome: str
    """``passed``, ``failed`` or ``skipped`` (pytest's report outcome)."""
    duration_s: float
    when: str = "call"
    type: str = ""
    """The exception's type name when it failed."""
    message: str = ""


@dataclass(frozen=True, slots=True)
class HangReport:
    """A run the probe stopped: which test hung, after how long, and what finished before."""

    test_id: str
    limit_s: float
    """How long the test's call ran before the probe stopped the run."""
    before_s: float
    """How long the run had been going when the test started (the part that did not hang)."""
    observed: tuple[Observed, ...] = ()

    @property
    def slowest_s(self) -> float:
        """The longest call among the tests that finished before the hang (0 when none did)."""
        return max((o.duration_s for o in self.observed if o.when == "call"), default=0.0)


def probe_command(resolved: ResolvedCommand, probe: HangProbe) -> ResolvedCommand | None:
    """``resolved`` with the probe loaded, or None when it cannot be probed.

    Only a plain ``pytest`` last command qualifies (no pipes, redirections or substitutions, no
    ``cd`` in the line, pytest's ``faulthandler`` plugin not disabled): the plugin is appended as
    ``-p arcs_hang_probe`` and found through ``PYTHONPATH``, also when the command sets its own
    (``PYTHONPATH=src pytest``, ``env PYTHONPATH=src pytest``: :attr:`ResolvedCommand.shell` keeps
    ARCS's folders, which :func:`shell_prefix` names in ``ARCS_PYTHONPATH``). ``node --test``: unchanged (the probe
    is preloaded through ``NODE_OPTIONS``, :mod:`runners.hang_node`). Other runners are not probed:
    they keep the configured timeout.
    """
    if probe.probe_s <= 0:
        return None
    if resolved.framework == "node":
        return resolved
    if resolved.framework != "pytest" or not plain_pytest(resolved.command):
        return None
    from runners.frameworks.shell import append_to_last as _append_to_last
    from runners.frameworks.shell import last_segment as _last_segment

    if "no:faulthandler" in _last_segment(resolved.command):
        return None
    return replace(resolved, command=_append_to_last(resolved.command, f"-p {PLUGIN}"))


def plain_pytest(command: str) -> bool:
    """Whether ``-p plugin`` can be appended to ``command``: its last segment is a plain ``pytest``
    call (no pipes, redirections, substitutions or ``$``) and the line has no ``cd`` and one line."""
    from runners.frameworks.shell import last_segment as _last_segment
    from runners.frameworks.shell import plain as _plain

    last = _last_segment(command)
    if not _PYTEST.search(last) or not _plain(last) or "$" in last:
        return False
    return not (re.search(r"(?:^|[;&|\s])cd\s", command) or "\n" in command.strip())


def shell_prefix(probe: HangProbe, framework: str | None = "pytest") -> str:
    """Shell lines that load the probe of ``framework`` from the private folder and configure it."""
    folder = f'"${PRIVATE_ENV}/{PROBE_DIR}"'
    common = (
        f"ARCS_HANG_PROBE_S={shlex.quote(repr(float(probe.probe_s)))} "
        f"ARCS_HANG_RATIO={shlex.quote(repr(float(probe.ratio)))}; "
    )
    if framework == "node":
        from runners.hang_node import PRELOAD

        # NODE_OPTIONS takes a quoted path; the user's own options are kept after it.
        preload = f'\\"${PRIVATE_ENV}/{PROBE_DIR}/{PRELOAD}\\"'
        return f'export NODE_OPTIONS="--require={preload}${{NODE_OPTIONS:+ $NODE_OPTIONS}}" ' + common
    # ARCS_PYTHONPATH mirrors ARCS's own folders: a user's `PYTHONPATH=src pytest` keeps them
    # (runners.shellenv.keep_pythonpath), so `-p arcs_hang_probe` still imports.
    return (
        f'export PYTHONPATH={folder}"${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'ARCS_PYTHONPATH={folder}"${{ARCS_PYTHONPATH:+:$ARCS_PYTHONPATH}}" ARCS_HANG_LOG={folder}/{EVENTS} '
        f"ARCS_HANG_LIMITS={folder}/{LIMITS} " + common
    )


def install(private: Path, framework: str | None = "pytest") -> None:
    """Write the probe of ``framework`` into the run's ``private`` folder; clear an old event log."""
    _probe_folder(private)
    if framework == "node":
        from runners.hang_node import PRELOAD, PRELOAD_SOURCE, WORKER, WORKER_SOURCE

        wsfs.write_text(private, f"{PROBE_DIR}/{PRELOAD}", PRELOAD_SOURCE, mode=0o644)
        wsfs.write_text(private, f"{PROBE_DIR}/{WORKER}", WORKER_SOURCE, mode=0o644)
    else:
        wsfs.write_text(private, f"{PROBE_DIR}/{PLUGIN}.py", _PLUGIN_SOURCE, mode=0o644)
    wsfs.remove(private, f"{PROBE_DIR}/{EVENTS}")


def _probe_folder(private: Path) -> None:
    """``hang/`` in the private folder, writable by the sandbox user (another uid in setpriv mode):
    the folder is ARCS's own, so its mode is set through its descriptor, never through a link."""
    with wsfs.directory(private, PROBE_DIR, create=True) as fd:
        os.fchmod(fd, 0o777)


DEFAULT_LIMIT_FLOOR_S = 3.0
"""No per-test limit is shorter than this (a loaded machine stretches short tests)."""
DEFAULT_LIMIT_FACTOR = 5.0


def limits_of(
    run: TestRun, *, floor_s: float = DEFAULT_LIMIT_FLOOR_S, factor: float = DEFAULT_LIMIT_FACTOR
) -> dict[str, float]:
    """Per-test limits for the runs after ``run`` (a pytest baseline), measured once and shared.

    A test ``run`` saw finish may take ``factor`` x its own duration (at least ``floor_s``); the test
    the probe stopped as a hang may take as long as the slowest test that finished (at least
    ``floor_s``): a candidate that does not fix the hang is stopped after that long instead of after
    the ratio rule's ``max(probe, ratio x everything before it)``. Tests ``run`` never observed keep the
    ratio rule. Empty for other frameworks (their ids are not pytest node ids)."""
    if run.framework != "pytest":
        return {}
    hung = {
        r.id for r in run.results if run.hang_s > 0 and r.failure is not None and r.failure.type == "timeout"
    }
    limits: dict[str, float] = {}
    slowest = 0.0
    for r in run.results:
        if r.id in hung or r.outcome not in ("passed", "failed") or r.duration_s is None:
            continue
        slowest = max(slowest, r.duration_s)
        limits[r.id] = max(limits.get(r.id, 0.0), floor_s, factor * r.duration_s)
    for tid in hung:
        limits[tid] = max(floor_s, slowest)
    return {k: round(v, 3) for k, v in sorted(limits.items())}


def write_limits(private: Path, limits: Mapping[str, float]) -> None:
    """Write ``limits`` (:func:`limits_of`) where the probe of the run with ``private`` reads them."""
    _probe_folder(private)
    wsfs.write_text(private, f"{PROBE_DIR}/{LIMITS}", json.dumps(dict(limits)), mode=0o644)


def read_events(text: str) -> list[dict[str, object]]:
    """The event log's records of a test's start or end (malformed and other lines skipped)."""
    out: list[dict[str, object]] = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict) and ("start" in data or "done" in data):
            out.append(data)
    return out


def hang_of(events: list[dict[str, object]], *, exit_code: int, output: str) -> HangReport | None:
    """The hang the probe stopped, from its event log and the run's output, or None.

    A hang needs all three: the last test that started never reported its call, faulthandler's
    ``Timeout (h:mm:ss)!`` header is in the output, and the process exited with faulthandler's
    status 1 (a dump printed by some other faulthandler user, after which the run went on, is not)
    or died of a segmentation fault in the middle of the dump (reading the frames of a thread that
    is still running is not safe, and now and then it crashes: the deadline fired all the same).
    """
    if exit_code not in _DUMP_EXITS or not _DUMP.search(output):
        return None
    started: dict[str, object] | None = None
    observed: list[Observed] = []
    for ev in events:
        if "start" in ev:
            started = ev
        elif "done" in ev and not ev.get("sub"):
            # A subtest's report (pytest's own ``subtests``) is not the end of its test's call.
            tid = str(ev["done"])
            if started is not None and ev.get("when") == "call" and tid == started.get("start"):
                started = None
            observed.append(
                Observed(
                    id=tid,
                    outcome=str(ev.get("outcome", "")),
                    duration_s=_num(ev.get("s")),
                    when=str(ev.get("when", "call")),
                    type=str(ev.get("type", "")),
                    message=str(ev.get("message", "")),
                )
            )
    if started is None:
        return None
    return HangReport(
        test_id=str(started["start"]),
        limit_s=_num(started.get("limit_s")),
        before_s=_num(started.get("before_s")),
        observed=tuple(observed),
    )


def read_hang(private: Path, *, exit_code: int, output: str) -> HangReport | None:
    """:func:`hang_of` over the event log in the run's ``private`` folder (None when there is none,
    or when the tests replaced it with anything but a regular file).

    Only the last :data:`EVENTS_CAP` bytes are read (the first, partial line of that tail is
    dropped): a test that floods the log costs the host at most that much."""
    if exit_code not in _DUMP_EXITS or not _DUMP.search(output):
        return None  # no hang: the log is not even opened
    try:
        data = wsfs.read_bytes(private, f"{PROBE_DIR}/{EVENTS}", limit=EVENTS_CAP, tail=True)
    except OSError:
        return None
    if len(data) >= EVENTS_CAP:
        data = data.partition(b"\n")[2]
    return hang_of(read_events(data.decode("utf-8", "replace")), exit_code=exit_code, output=output)


def _num(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0


__all__ = [
    "DEFAULT_HANG_PROBE_S",
    "DEFAULT_HANG_RATIO",
    "DEFAULT_LIMIT_FACTOR",
    "DEFAULT_LIMIT_FLOOR_S",
    "HangProbe",
    "HangReport",
    "Observed",
    "hang_of",
    "install",
    "limits_of",
    "plain_pytest",
    "probe_command",
    "read_events",
    "read_hang",
    "shell_prefix",
    "write_limits",
]
