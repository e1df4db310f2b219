"""The published ``docs/arcs.schema.json``: generated from the model and current, accepting every
``.arcs.yml`` example of the README and docs/, rejecting what ARCS rejects — with each rule the
schema cannot say listed, and why."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from bot import config_schema
from jobs import config as arcs_config
from jobs.config import ArcsConfigError
from jobs.config_model import yaml_keys

ROOT = Path(__file__).resolve().parents[2]
SCHEMA: dict[str, Any] = json.loads((ROOT / "docs" / "arcs.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
MODELINE = "# yaml-language-server: $schema="
"""How the README marks an ``.arcs.yml`` example (the editor hint); docs/ also writes ``# .arcs.yml``."""


def _yaml_blocks(path: Path) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)


def _is_example(block: str) -> bool:
    first = block.lstrip().splitlines()[0] if block.strip() else ""
    return first.startswith(MODELINE) or first.strip() in {"# .arcs.yml", "# .github/arcs.yml"}


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples() -> list[tuple[str, str]]:
    """Every ``.arcs.yml`` example: the marked yaml blocks, and :mod:`jobs.config`'s docstring."""
    found = [
        (f"{path.relative_to(ROOT)}#{i}", block)
        for path in _documents()
        for i, block in enumerate(_yaml_blocks(path))
        if _is_example(block)
    ]
    doc = arcs_config.__doc__ or ""
    start = doc.index("::\n") + 3
    end = doc.index("\nErrors name the key")
    found.append(("jobs/config.py docstring", "\n".join(line[4:] for line in doc[start:end].splitlines())))
    return found


def test_the_committed_schema_is_the_generated_one() -> None:
    assert config_schema.schema() == SCHEMA
    assert (ROOT / "docs" / "arcs.schema.json").read_text(encoding="utf-8") == config_schema.render()
    assert config_schema.main(["--check"]) == 0


def test_check_fails_when_the_model_changed_without_regenerating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "arcs.schema.json"
    stale.write_text(
        config_schema.render().replace('"default": "arcs"', '"default": "bot"'), encoding="utf-8"
    )
    monkeypatch.setattr(config_schema, "SCHEMA_PATH", stale)
    assert config_schema.main(["--check"]) == 1
    assert "--write" in capsys.readouterr().err
    assert (
        config_schema.main(["--write"]) == 0 and stale.read_text(encoding="utf-8") == config_schema.render()
    )
    assert config_schema.main(["--check"]) == 0


def test_the_schema_is_draft_2020_12_and_ready_for_schemastore() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"] == config_schema.SCHEMA_URL and SCHEMA["title"] and SCHEMA["description"]
    assert SCHEMA["additionalProperties"] is False and list(SCHEMA["properties"]) == list(yaml_keys())
    assert all(prop.get("description") for prop in SCHEMA["properties"].values())
    assert "path" not in SCHEMA["properties"]  # the model's record of the file, not a key
    assert config_schema.CATALOG_ENTRY["fileMatch"] == [
        "**/.arcs.yml",
        "**/.arcs.yaml",
        "**/.github/arcs.yml",
    ]


def test_there_are_examples_and_every_unmarked_yaml_block_is_something_else() -> None:
    names = [name for name, _ in examples()]
    assert any(name.startswith("README.md") for name in names)
    assert any(name.startswith("docs/") for name in names)
    for path in _documents():
        for block in _yaml_blocks(path):
            if _is_example(block):
                continue
            data = yaml.safe_load(block)
            # A block made only of ARCS keys is an .arcs.yml example that is not marked (so not checked).
            assert not (isinstance(data, dict) and set(data) <= set(yaml_keys())), (path, block[:80])


@pytest.mark.parametrize(("name", "text"), examples(), ids=[name for name, _ in examples()])
def test_every_example_is_valid_for_arcs_and_for_the_schema(name: str, text: str) -> None:
    arcs_config.parse(text)  # ARCS accepts it
    errors = [error.message for error in VALIDATOR.iter_errors(yaml.safe_load(text))]
    assert errors == [], name


# Every file the CLI (and the App) rejects in the config tests: tests/bot/test_repo_config_github.py,
# tests/jobs/test_config_bad_input_app.py, tests/bot/test_cli_bad_input.py,
# tests/bot/action/test_action_config.py, tests/runners/test_config.py, tests/jobs/test_paths_policy.py.
REJECTED = [
    "tier: banana\n",
    "tier: huge\n",
    "budget: {usd: lots}\n",
    "budget:\n  iterations: 2.5\n",
    "budget:\n  iterations: 0\n",
    "budget: 3\n",
    "budget: {usd: -1}\n",
    "triggers:\n  ci: maybe\n",
    "draft: 1\n",
    "max_prs_per_day: -1\n",
    "max_open_prs: yes\n",
    "label: ''\n",
    "label: '   '\n",
    "branches: [main, 3]\n",
    "paths:\n  allowed: src\n  denied: [1]\n",
    "paths: {denied: 3}\n",
    "paths: {nope: []}\n",
    "test: 5\n",
    "test: [a, b]\n",
    "test: '  '\n",
    "setup: {a: 1}\n",
    "setup: [ok, 3]\n",
    "setup: []\n",
    "timeout_s: abc\n",
    "timeout_s: true\n",
    "timeout_s: -1\n",
    "memory_mb: 1.5\n",
    "memory_mb: 0\n",
    "setup_network: {deny: [a.example.org]}\n",
    "setup_network: {allow: npm.example.com}\n",
    "on_no_fix: maybe\n",
    "dependency_updates: revert\n",
    "dependency_updates: true\n",
    "dependency_updates: [fix]\n",
    "on_nofix: revert\n",
    "tirgger: {ci: true}\n",
    "tigger:\n  ci: false\n",
    "budget: {dollars: 3}\n",
    "triggers:\n  comment: false\n",
    "max_pr_per_day: 3\nzzz: 1\n",
    "path: somewhere\n",
    "extends: acme/other\n",
    "extends: [acme/.github]\n",
    "- a\n- b\n",
    "just a string\n",
    "42\n",
]

ONLY_THE_MODEL_REJECTS = {
    "budget: {usd: .nan}\n": "JSON has no NaN: YAML's .nan is a number to a validator, and NaN > 0 is not false there",
    "budget: {wall_s: .inf}\n": "JSON has no infinity: YAML's .inf passes `type: number, exclusiveMinimum: 0`",
    "timeout_s: .nan\n": "as budget.usd: .nan (finite numbers only, a rule JSON cannot state)",
    "timeout_s: .inf\n": "as budget.wall_s: .inf",
    "setup_network: {allow: ['http://npm.example.com']}\n": "an allow-list entry's syntax (host, host:port, "
    "[v6]:port, *.domain[:port]) is runners.egress's parser; the schema says only `string`",
    "setup_network: {allow: ['*.org']}\n": "the same parser: a wildcard needs a domain of two labels or more",
}
"""What the model enforces and the schema cannot express: each case, and why."""

ONLY_THE_SCHEMA_REJECTS = {
    "tier: Small\n": "choices are read case-insensitively; the schema lists them as written (editors suggest those)",
    "on_no_fix: ' revert'\n": "choices are stripped; the schema lists them as written",
    "dependency_updates: Comment\n": "as tier: Small (case-insensitive choices)",
    "label:\n": "`key:` with no value means the default; the schema asks for a value where the default is not null",
    "triggers:\n": "a null section means the default section",
    "draft: yes\n": "ARCS reads YAML 1.1 (yes: true); an editor reads YAML 1.2, where `yes` is a string",
}
"""What the model accepts that the schema refuses (stricter, never looser): each case, and why."""


@pytest.mark.parametrize("text", REJECTED)
def test_the_schema_rejects_what_arcs_rejects(text: str) -> None:
    with pytest.raises(ArcsConfigError):
        arcs_config.parse(text)
    assert not VALIDATOR.is_valid(yaml.safe_load(text))


@pytest.mark.parametrize(("text", "why"), ONLY_THE_MODEL_REJECTS.items())
def test_known_difference_rules_the_schema_cannot_state(text: str, why: str) -> None:
    with pytest.raises(ArcsConfigError):
        arcs_config.parse(text)
    assert VALIDATOR.is_valid(yaml.safe_load(text)), (
        f"the schema now rejects it: drop it from the list ({why})"
    )


@pytest.mark.parametrize(("text", "why"), ONLY_THE_SCHEMA_REJECTS.items())
def test_known_difference_the_schema_is_stricter(text: str, why: str) -> None:
    arcs_config.parse(text)  # ARCS accepts it
    data = yaml.safe_load(text)
    if text == "draft: yes\n":
        data = {"draft": "yes"}  # what a YAML 1.2 editor sees
    assert not VALIDATOR.is_valid(data), f"the schema now accepts it: drop it from the list ({why})"


def test_the_schema_has_one_spelling_across_pydantic_versions() -> None:
    """pydantic < 2.9 wraps a ``$ref`` with siblings in ``allOf`` and writes bounds as floats; the
    published file must not depend on which version CI (or the lowest-versions run) has."""
    old_style = {
        "properties": {
            "budget": {"allOf": [{"$ref": "#/$defs/B"}], "description": "d"},
            "usd": {"anyOf": [{"type": "number", "exclusiveMinimum": 0.0}, {"type": "null"}]},
            "both": {"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
        }
    }
    canonical = config_schema._canonical(old_style)
    assert type(canonical["properties"]["usd"]["anyOf"][0]["exclusiveMinimum"]) is int  # "0", not "0.0"
    assert canonical == {
        "properties": {
            "budget": {"$ref": "#/$defs/B", "description": "d"},
            "usd": {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}]},
            "both": {"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
        }
    }
    assert isinstance(config_schema._canonical({"minimum": 0.5})["minimum"], float)
