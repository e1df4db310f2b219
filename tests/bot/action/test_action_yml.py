"""``action.yml`` against the Actions metadata schema (SchemaStore's, vendored pinned, and ARCS' own
statement of the essential rules), and wired to what ``arcs action`` reads and writes."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from bot.action.env import read_inputs
from bot.action.summary import ActionOutcome, step_outputs

ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = ROOT / "tests" / "fixtures" / "action"


def action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return data


def _schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return data


SCHEMA_FILES = ("schemas/github-action.json", "action-metadata.schema.json")


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_action_yml_matches_the_metadata_schema(name: str) -> None:
    schema = _schema(name)
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(action())


@pytest.mark.parametrize("name", SCHEMA_FILES)
@pytest.mark.parametrize(
    "breakage",
    ["input without description", "run step without shell", "unknown top-level key", "no runs"],
)
def test_the_schemas_reject_broken_metadata(name: str, breakage: str) -> None:
    broken = copy.deepcopy(action())
    if breakage == "input without description":
        del broken["inputs"]["mode"]["description"]
    elif breakage == "run step without shell":
        del broken["runs"]["steps"][0]["shell"]
    elif breakage == "unknown top-level key":
        broken["entrypoint"] = "arcs"
    else:
        del broken["runs"]
    assert list(jsonschema.Draft7Validator(_schema(name)).iter_errors(broken)), breakage


def _step(step_id: str) -> dict[str, Any]:
    [step] = [s for s in action()["runs"]["steps"] if s.get("id") == step_id]
    return step


class _Recording(Mapping[str, str]):
    """A mapping that records which keys the reader asked for."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return default

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_every_input_reaches_arcs_action_and_nothing_else_is_read() -> None:
    inputs = action()["inputs"]
    env = _step("arcs")["env"]
    expected = {f"INPUT_{name.upper().replace('-', '_')}" for name in inputs if name != "anthropic-api-key"}
    passed = {key for key in env if key.startswith("INPUT_")}
    assert passed == expected
    for key in passed:
        name = key.removeprefix("INPUT_").lower().replace("_", "-")
        assert env[key] == f"${{{{ inputs.{name} }}}}"
    assert env["ANTHROPIC_API_KEY"] == "${{ inputs.anthropic-api-key }}"
    recording = _Recording()
    read_inputs(recording, [])
    assert {k for k in recording.asked if k.startswith("INPUT_")} == expected
    assert env["ARCS_ACTION_PATH"] == "${{ steps.workflow-env.outputs.path }}"
    assert '"$ARCS_BIN" action' in _step("arcs")["run"]


def test_outputs_are_the_step_outputs_arcs_action_writes() -> None:
    written = set(step_outputs(ActionOutcome(verdict="fixed", reason="")))
    outputs = action()["outputs"]
    assert set(outputs) == written
    for name, spec in outputs.items():
        assert spec["value"] == f"${{{{ steps.arcs.outputs.{name} }}}}"


PINNED = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # (v\d+\.\d+\.\d+)$")
"""A third-party action pinned to a full commit sha, its release tag in a comment."""
NODE24_RELEASES = {
    # The commit of each release tag, each checked in two independent public sources (see the
    # report of #24); every one of these releases runs on Node 24 (Node 20 actions leave the runners).
    ("actions/checkout", "v6.0.2"): "de0fac2e4500dabe0009e67214ff5f5447ce83dd",
    ("actions/setup-python", "v6.2.0"): "a309ff8b426b58ec0e2a45f0f869d46889d02405",
    ("actions/cache", "v5.0.3"): "cdf6c1fa76f9f475f3d7449005a359c84ca0f306",
    ("actions/upload-artifact", "v6.0.0"): "b7c566a772e6b6bfb58ed0dc250532a479d7789f",
}


def pinned_uses(text: str) -> list[tuple[str, str, str]]:
    """(action, sha, tag) of every ``uses:`` line; a line not pinned that way is an assertion error."""
    found = []
    for line in text.splitlines():
        if re.match(r"^\s*(?:- )?uses:", line) and "OWNER/arcs@" not in line:
            match = PINNED.match(line)
            assert match, f"not pinned to a commit sha with its tag in a comment: {line.strip()}"
            name, sha, tag = match.groups()
            found.append((name, sha, tag))
    return found


def test_arcs_is_installed_pinned_to_the_action_and_third_party_actions_are_pinned() -> None:
    install = _step("install")
    assert install["env"]["ARCS_SOURCE"] == "${{ github.action_path }}"
    run = " ".join(install["run"].replace("\\\n", " ").split())  # continuation lines joined
    lock = 'pip install -q --disable-pip-version-check --no-deps --require-hashes -r "$ARCS_SOURCE/requirements/runtime.txt"'
    assert lock in run, "dependencies come from the hashed lock at the action's ref"
    assert 'pip install -q --disable-pip-version-check --no-deps "$ARCS_SOURCE"' in run
    assert run.index("requirements/runtime.txt") < run.index('--no-deps "$ARCS_SOURCE"')
    assert (ROOT / "requirements" / "runtime.txt").is_file()
    python = _step("python")
    assert python["with"]["update-environment"] is False  # the workflow's own Python stays first on PATH
    uses = pinned_uses((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert {name for name, _, _ in uses} == {"actions/setup-python", "actions/cache"}
    for name, sha, tag in uses:
        assert NODE24_RELEASES.get((name, tag)) == sha, (name, tag, sha)
    cache = next(s for s in action()["runs"]["steps"] if s.get("uses", "").startswith("actions/cache@"))
    assert "github.action_ref" in cache["with"]["key"]
