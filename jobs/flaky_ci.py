"""A CI failure of known-flaky tests is never repaired as code (issue #26).

:func:`screen` runs in :func:`jobs.attempt.run_ci` after the log is read and before admission.
The failing tests the log names are recorded in the repository's test history (source ``ci``);
then the history (:mod:`jobs.test_history`) is asked which of them are known flaky:

* **all of them**: no repair (no clone, no model, no budget). The attempt is ``skipped`` with a
  ``notice`` event; the check run (and the status comment on a pull request) gives the evidence.
  With ``.arcs.yml`` ``flaky.rerun_failed_jobs: true``, ARCS asks GitHub to re-run the run's failed
  jobs instead, once per workflow run: only the run's first attempt is re-run (a failure of the
  re-run is attempt 2, and the re-run is recorded in the event, so it is counted);
* **some of them**: the repair goes on for the others only (the known-flaky ones are taken out
  of the CI tests that name the repair's targets), and a notice says which were left out;
* **none**, or no history: the repair goes on unchanged.

Anyone with write access can still ask for a repair with ``/arcs fix`` (a command does not pass
here).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from jobs.config import ArcsConfig
from jobs.repair.flaky import evidence
from jobs.run import AttemptRun, one_line
from jobs.test_history import known_flaky, record_ci_failure, verdicts

if TYPE_CHECKING:
    from runners.logs import FailureReport


def screen(
    run: AttemptRun,
    config: ArcsConfig,
    failure: FailureReport,
    *,
    head_sha: str,
    run_id: int,
    run_attempt: int | None,
    workflow: str | None,
) -> FailureReport | str:
    """The failure to repair (its known-flaky tests taken out), or the attempt's final status when
    every failing test is known flaky."""
    history = run.deps.history
    ids = tuple(dict.fromkeys(t for t in failure.test_ids if t))
    record_ci_failure(
        history,
        run.repo,
        sha=head_sha,
        run_id=run_id,
        run_attempt=run_attempt,
        workflow=workflow,
        test_ids=ids,
        attempt_id=run.attempt.id,
    )
    if history is None or not ids:
        return failure
    flaky = known_flaky(verdicts(history, run.repo, ids))
    if not flaky:
        return failure
    said = evidence(flaky.values())
    if len(flaky) < len(ids):
        left = [t for t in ids if t not in flaky]
        run.event(
            "notice",
            f"{len(flaky)} of {len(ids)} failing tests are known flaky and are not repaired: {said}",
            policy="known_flaky",
            flaky=sorted(flaky),
        )
        return dataclasses.replace(failure, test_ids=tuple(left))
    return _not_repaired(
        run, config, head_sha=head_sha, run_id=run_id, run_attempt=run_attempt, said=said, tests=ids
    )


def _not_repaired(
    run: AttemptRun,
    config: ArcsConfig,
    *,
    head_sha: str,
    run_id: int,
    run_attempt: int | None,
    said: str,
    tests: tuple[str, ...],
) -> str:
    count = f"{len(tests)} failing test" + ("s" if len(tests) != 1 else "")
    rerun, rerun_line = _rerun(run, config, run_id=run_id, run_attempt=run_attempt)
    body = (
        f"ARCS did not repair this failure: the {count} {'is' if len(tests) == 1 else 'are all'} known "
        f"flaky, and a flaky test is not fixed by changing the code. Evidence: {said}.\n\n{rerun_line}\n\n"
        "To ask for a repair anyway, comment `/arcs fix`."
    )
    run.open_check_run(head_sha)
    return run.finish(
        "skipped",
        f"known flaky: {said}",
        title="ARCS: known flaky tests, not repaired",
        body=body,
        conclusion="neutral",
        event="notice",
        event_data={"policy": "known_flaky", "tests": list(tests)[:50], "rerun": rerun, "run_id": run_id},
        check={"title": one_line(f"Known flaky, not repaired: {count}", 200), "summary": body},
    )


def _rerun(run: AttemptRun, config: ArcsConfig, *, run_id: int, run_attempt: int | None) -> tuple[bool, str]:
    """Ask GitHub to re-run the failed jobs when ``.arcs.yml`` allows it and this run was not
    re-run yet: (asked, the line that says what happened)."""
    if not config.flaky.rerun_failed_jobs:
        return (
            False,
            "Re-run the failed jobs to get a green build (`.arcs.yml` `flaky.rerun_failed_jobs: true` lets ARCS do it).",
        )
    if run_attempt is not None and run_attempt > 1:
        return False, (
            f"This is attempt {run_attempt} of the workflow run: ARCS re-runs a run's failed jobs once, "
            "and does not again."
        )
    try:
        run.gh.rerun_failed_jobs(run.repo, run_id)
    except Exception as exc:  # said on the check run: a re-run is a courtesy, not the job
        return (
            False,
            f"ARCS could not re-run the failed jobs: {one_line(f'{type(exc).__name__}: {exc}', 300)}.",
        )
    return True, "ARCS asked GitHub to re-run the failed jobs (once for this workflow run)."


__all__ = ["screen"]
