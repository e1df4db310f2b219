"""The README's "GitHub Action" workflows: they parse, are valid workflows (SchemaStore's workflow
schema, vendored), use only the action's real inputs and outputs, and keep the safety rules."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.bot.action.test_action_yml import NODE24_RELEASES, pinned_uses

ROOT = Path(__file__).resolve().parents[3]
ACTION_USES = re.compile(r"^OWNER/arcs@v\d+\.\d+\.\d+$")


class _WorkflowLoader(yaml.SafeLoader):
    """YAML 1.2 booleans only: ``on:`` stays a key (PyYAML's YAML 1.1 reads it as True)."""


_WorkflowLoader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_WorkflowLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf"))


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## GitHub Action\n")
    end = text.index("\n## ", start + 5)
    return text[start:end]


def workflows() -> list[tuple[str, dict[str, Any]]]:
    blocks = re.findall(r"```yaml\n(.*?)```", section(), re.DOTALL)
    return [(block, yaml.load(block, Loader=_WorkflowLoader)) for block in blocks]


def action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return data


def _arcs_steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        step
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if ACTION_USES.match(str(step.get("uses", "")))
    ]


def test_the_section_has_the_three_workflows() -> None:
    found = workflows()
    assert len(found) == 3
    triggers = [wf["on"] for _, wf in found]
    assert triggers[0] == ["push", "pull_request"]
    assert set(triggers[1]) == {"workflow_run"} and set(triggers[2]) == {"issue_comment"}


@pytest.mark.parametrize("index", [0, 1, 2])
def test_each_workflow_is_valid_and_uses_only_real_inputs(index: int) -> None:
    schema = json.loads(
        (ROOT / "tests/fixtures/action/schemas/github-workflow.json").read_text(encoding="utf-8")
    )
    _, workflow = workflows()[index]
    jsonschema.Draft7Validator(schema).validate(workflow)
    inputs = set(action()["inputs"])
    outputs = set(action()["outputs"])
    [step] = _arcs_steps(workflow)
    assert set(step.get("with", {})) <= inputs, set(step["with"]) - inputs
    text = json.dumps(workflow)
    for name in re.findall(r"steps\.arcs\.outputs\.([A-Za-z_-]+)", text):
        assert name in outputs
    # Write permissions are asked for only where publishing needs them; never a blanket write-all.
    assert "write-all" not in text


def test_the_same_job_snippet_is_six_lines_after_the_test_step() -> None:
    block, workflow = workflows()[0]
    [step] = _arcs_steps(workflow)
    assert step["if"] == "failure()"
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if "- name: Repair with ARCS" in line)
    assert len(lines[start:]) == 6 and lines[start - 1].strip() == "- run: pytest -q"
    assert workflow["jobs"]["test"]["permissions"] == {"contents": "write", "pull-requests": "write"}


def test_comment_workflow_checks_association_and_forks_before_checkout() -> None:
    _, workflow = workflows()[2]
    job = workflow["jobs"]["repair"]
    for association in ("OWNER", "MEMBER", "COLLABORATOR"):
        assert association in job["if"]
    assert "author_association" in job["if"] and "/arcs fix" in job["if"]
    steps = job["steps"]
    assert "isCrossRepository" in steps[0]["run"]  # refuse forks before their code is checked out
    assert (
        steps[1]["uses"].startswith("actions/checkout@") and steps[1]["with"]["persist-credentials"] is False
    )
    assert "${{" not in steps[0]["run"]  # no expression interpolated into the shell script
    assert _arcs_steps(workflow)[0]["with"]["mode"] == "suggest"


def test_workflow_run_snippet_skips_forks_and_failed_runs_only() -> None:
    _, workflow = workflows()[1]
    condition = workflow["jobs"]["repair"]["if"]
    assert (
        "conclusion == 'failure'" in condition
        and "head_repository.full_name == github.repository" in condition
    )
    assert workflow["permissions"]["actions"] == "read"


@pytest.mark.parametrize("index", [0, 1, 2])
def test_each_workflow_pins_actions_keeps_no_credentials_and_has_a_timeout(index: int) -> None:
    block, workflow = workflows()[index]
    uses = pinned_uses(block)  # every third-party `uses:` is a full commit sha with its tag
    assert uses, "the workflow uses actions/checkout at least"
    for name, sha, tag in uses:
        assert NODE24_RELEASES.get((name, tag)) == sha, (name, tag, sha)
    for job_name, job in workflow["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), f"{job_name}: no timeout-minutes"
        for step in job["steps"]:
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, job_name
