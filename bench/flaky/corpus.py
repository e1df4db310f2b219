"""The flaky-test corpus: seeded flaky tests in outside PyPI packages (issue #26, Done when).

Each package (pinned sdist, fetched and hash-checked by :mod:`bench.outside.corpus`, never used in
bench/ before) gets one added test file per seeded cause, written from :data:`SEEDS`; every file
exercises the package (``{call}`` evaluates to 3) and holds its neighbours (a polluter, a stable
test). A case is one test id with its true label: a cause, ``stable`` (never fails) or ``broken``
(always fails: a real bug, not a flake). ``cases.json`` (committed before the first run) fixes
the list and the held-out split: the whole ``ordered-set`` package.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from bench.outside.corpus import Package, unpacked

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.json"
TEST_DIR = "arcs_flaky_tests"


@dataclass(frozen=True)
class Target:
    """A package and an expression of its API that evaluates to 3."""

    package: Package
    module: str
    call: str
    held_out: bool = False


TARGETS: tuple[Target, ...] = (
    Target(
        Package("funcy", "2.0", "3963315d59d41c6f30c04bc910e10ab50a3ac4a225868bfa96feed133df075cb", {}),
        "funcy",
        "funcy.first(funcy.remove(funcy.isnone, [None, 3, 4]))",
    ),
    Target(
        Package("tomlkit", "0.13.2", "fff5fe59a87295b278abd31bec92c15d9bc4a06885ab12bcea52c71119392e79", {}),
        "tomlkit",
        "int(tomlkit.parse('a = 3')['a'])",
    ),
    Target(
        Package(
            "ordered-set", "4.1.0", "694a8e44c87657c59292ede72891eb91d34131f6531463aab3009191c77364a8", {}
        ),
        "ordered_set",
        "ordered_set.OrderedSet([3, 4, 3])[0]",
        held_out=True,
    ),
)

# file stem -> (source, {test name: true label}). The label names the cause a diagnosis should give.
SEEDS: dict[str, tuple[str, dict[str, str]]] = {
    "order_polluter": (
        """import {module}

_CACHE = {{}}


def test_fill_cache():
    _CACHE["v"] = {call} + 1
    assert _CACHE["v"] == 4


def test_reads_cache():
    # Seeded: reads module state another test leaves behind.
    assert _CACHE.get("v", {call}) == 3


def test_stable():
    assert {call} == 3
""",
        {"test_reads_cache": "order-dependence", "test_stable": "stable"},
    ),
    "order_setter": (
        """import {module}

_STATE = {{}}


def test_a_setup_state():
    _STATE["x"] = {call}


def test_uses_state():
    # Seeded: passes only when test_a_setup_state ran first in the same process.
    assert _STATE.get("x") == 3
""",
        {"test_uses_state": "order-dependence"},
    ),
    "randomness": (
        """import random

import {module}


def test_random_draw():
    # Seeded: an unseeded draw decides the outcome (1 in 5).
    assert {call} + random.randint(0, 4) < 7


def test_broken():
    # A real bug, not a flake: always fails.
    assert {call} == 4
""",
        {"test_random_draw": "randomness", "test_broken": "broken"},
    ),
    "hash_order": (
        """import {module}


def test_set_order():
    # Seeded: relies on the iteration order of a set of strings (PYTHONHASHSEED).
    names = {{"alpha", "beta", "gamma", str({call})}}
    assert sorted(names)[0] == "3" and list(names)[0] != "gamma"
""",
        {"test_set_order": "randomness"},
    ),
    "time": (
        """import datetime

import {module}


def test_time_of_day():
    # Seeded: depends on the clock (the current tenth of a second, 1 in 4).
    tenth = datetime.datetime.now().microsecond // 100_000
    assert ({call} + tenth) % 4 != 0
""",
        {"test_time_of_day": "time"},
    ),
    "concurrency": (
        """import random
import threading
import time

import {module}


def test_background_result():
    # Seeded: a sleep race with a worker thread.
    out = []

    def work():
        time.sleep(random.uniform(0.0, 0.03))
        out.append({call})

    worker = threading.Thread(target=work)
    worker.start()
    time.sleep(0.02)
    try:
        assert out == [3]
    finally:
        worker.join()
""",
        {"test_background_result": "concurrency"},
    ),
    "network": (
        """import random
import socket
import threading
import time

import {module}


def test_local_server():
    # Seeded: connects before the server thread listens (sometimes).
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def serve():
        time.sleep(random.uniform(0.0, 0.03))
        srv.listen()
        conn, _ = srv.accept()
        conn.sendall(str({call}).encode())
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    time.sleep(0.02)
    with socket.create_connection(("127.0.0.1", port), timeout=2) as cli:
        assert cli.recv(8) == b"3"
    srv.close()
""",
        {"test_local_server": "network"},
    ),
    "resource": (
        """import random
import resource

import {module}


def test_many_handles():
    # Seeded: leaks file handles under a low descriptor limit (sometimes too many).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    handles = []
    try:
        for _ in range(random.randint(40, 72)):
            handles.append(open(__file__))
        assert {call} == 3
    finally:
        for h in handles:
            h.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
""",
        {"test_many_handles": "resource"},
    ),
}


def case_list() -> list[dict[str, object]]:
    """Every case: id, package, version, test id, true label, split."""
    out: list[dict[str, object]] = []
    for t in TARGETS:
        for stem, (_, tests) in SEEDS.items():
            for name, label in tests.items():
                out.append(
                    {
                        "id": f"{t.package.name}-{stem}-{name}",
                        "package": t.package.name,
                        "version": t.package.version,
                        "test": f"{TEST_DIR}/test_{stem}.py::{name}",
                        "label": label,
                        "split": "held-out" if t.held_out else "dev",
                    }
                )
    return out


def materialize(package: str, dest: Path) -> Path:
    """The package's sdist with the seeded test files and a neutral ``pytest.ini``, at ``dest``."""
    (t,) = [t for t in TARGETS if t.package.name == package]
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(unpacked(t.package), dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    # The package's own ini may want plugins (coverage); the seeded tests need none.
    for name in ("pytest.ini", "tox.ini", "setup.cfg"):
        (dest / name).unlink(missing_ok=True)
    (dest / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n", encoding="utf-8")
    (dest / TEST_DIR).mkdir()
    for stem, (source, _) in SEEDS.items():
        text = source.format(module=t.module, call=t.call)
        (dest / TEST_DIR / f"test_{stem}.py").write_text(text, encoding="utf-8")
    return dest


if __name__ == "__main__":
    CASES.write_text(json.dumps(case_list(), indent=1) + "\n", encoding="utf-8")
    print(f"{CASES}: {len(case_list())} cases")
