"""``arcs action`` refuses the same ``.arcs.yml`` files as ``arcs fix`` and the App (issue #23):
exit 2, the verdict ``error`` with the line naming the key in the job summary and the step
outputs, no repair and nothing written to GitHub."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.action.conftest import World, event, project_files


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {".arcs.yml": "tier: banana\n"},
            ".arcs.yml: tier: expected one of 0, small, medium, large, auto, got 'banana'",
        ),
        (
            {".arcs.yml": "budget: {usd: .nan}\n"},
            ".arcs.yml: budget.usd: expected a finite positive number, got nan",
        ),
        (
            {".arcs.yml": "tirgger: {ci: true}\n"},
            ".arcs.yml: unknown key `tirgger` (did you mean `triggers`?)",
        ),
        (
            {".github/arcs.yml": "tier: banana\n"},
            ".github/arcs.yml: tier: expected one of 0, small, medium, large, auto, got 'banana'",
        ),
        (
            {".arcs.yml": "tier: 0\n", ".github/arcs.yml": "tier: 0\n"},
            ".arcs.yml and .github/arcs.yml both configure ARCS; keep one of them (ARCS reads a single file)",
        ),
    ],
    ids=["tier", "nan", "unknown-key", "dot-github", "both"],
)
def test_an_invalid_arcs_yml_is_exit_2_naming_the_key(
    world: World, files: dict[str, str], message: str
) -> None:
    repo = "Codertocat/configured"
    world.double.add_repo(
        repo, {**project_files(), **files}, default_branch="master", installation=world.installation
    )
    sha = world.double.branch_sha(repo, "master")
    assert sha is not None
    payload = event("push")
    payload["after"] = sha
    payload["head_commit"]["id"] = sha
    environ = world.environ(
        event_name="push",
        payload=payload,
        sha=sha,
        ref=payload["ref"],
        workspace=world.workspace(sha, repo),
        token=world.token(repo=repo),
        repo=repo,
    )
    outcome = world.run(environ)

    assert (outcome.verdict, outcome.exit_code, outcome.reason) == ("error", 2, message), outcome
    assert world.double.mutations == [] and world.double.open_pulls(repo) == []
    assert message in Path(environ["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")
    assert "verdict=error" in Path(environ["GITHUB_OUTPUT"]).read_text(encoding="utf-8")
    assert not list(Path(environ["RUNNER_TEMP"]).glob("arcs/trace-*.json"))  # no repair ran
