"""Measure a flaky test: N sandboxed runs in varied orders, then the cause classifier.

The runs go through the ordinary runner (:func:`runners.execute.run_tests`, a fresh workspace
copy each), narrowed with :meth:`ResolvedCommand.selecting` to the planned tests in the planned
order (pytest runs node ids in the order given). The first run is the test's whole file, which
also names its neighbours; the rest follow :func:`jobs.repair.flaky_cause.plan`. Proposing a fix
through the repair loop is not done yet (issue #26 item 4, second half).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from jobs.repair.flaky_cause import Diagnosis, Observed, Order, classify, function_body, plan
from runners import wsfs
from runners.base import Runner
from runners.commands import ResolvedCommand
from runners.execute import run_tests
from runners.results_types import TestRun


@dataclass(frozen=True)
class Measurement:
    """The runs of one deflake measurement and the verdict read from them."""

    observed: list[Observed]
    diagnosis: Diagnosis
    neighbours: list[str]
    source: str = ""
    """The test function's code (the classifier's last-resort hint)."""


def file_of(test_id: str) -> str:
    """The file part of a pytest node id (``tests/test_a.py::TestX::test_y`` -> ``tests/test_a.py``)."""
    return test_id.split("::", 1)[0]


def observe(order: Order, run: TestRun, test_id: str) -> Observed:
    """The target's outcome in ``run`` (``absent`` when the run did not report it)."""
    for r in run.results:
        if r.id == test_id:
            f = r.failure
            return Observed(order, r.outcome, f.type if f else None, f.message if f else "")
    error = run.errors[0] if run.errors else None
    return Observed(order, "absent", error.type if error else None, error.message if error else "")


def measure(
    runner: Runner,
    repo: Path,
    resolved: ResolvedCommand,
    test_id: str,
    runs: int,
    *,
    seed: int = 0,
    timeout_s: float = 600.0,
    memory_mb: int = 2048,
    progress: Callable[[int, Observed], None] | None = None,
) -> Measurement:
    """Run ``test_id`` ``runs`` times in varied orders and classify the cause of its flakiness.

    Raises ValueError when the command cannot be narrowed to single tests (only pytest-style
    node ids are ordered this way today).
    """
    whole = resolved.selecting([file_of(test_id)])
    if whole is None or resolved.framework != "pytest":
        raise ValueError(
            "deflake orders tests by pytest node id: the test command is not a plain pytest call"
        )

    def one(order: Order, command: ResolvedCommand) -> Observed:
        run = run_tests(
            runner,
            repo,
            command,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            env={"PYTHONHASHSEED": order.hash_seed},
        )
        return observe(order, run, test_id)

    first_order = Order("file", (file_of(test_id),), "1")
    first_run = run_tests(
        runner,
        repo,
        whole,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        env={"PYTHONHASHSEED": first_order.hash_seed},
    )
    in_file = [r.id for r in first_run.results if file_of(r.id) == file_of(test_id)]
    neighbours = [i for i in in_file if i != test_id]
    # The file run's order, as reported, lets the classifier see who ran before the test.
    first = observe(replace(first_order, tests=tuple(in_file) or (test_id,)), first_run, test_id)
    observed = [first]
    if progress:
        progress(0, first)
    for i, order in enumerate(plan(test_id, neighbours, runs, seed=seed)[1:], start=1):
        command = resolved.selecting(order.tests)
        if command is None:
            continue
        got = one(order, command)
        observed.append(got)
        if progress:
            progress(i, got)
    folder = f"{resolved.workdir}/" if resolved.workdir else ""
    source = function_body(wsfs.text_or_none(repo, folder + file_of(test_id)) or "", test_id)
    return Measurement(observed, classify(test_id, observed, source), neighbours, source)


__all__ = ["Measurement", "file_of", "measure", "observe"]
