"""The typed ``.arcs.yml`` model: frozen, closed, round-trips as JSON, and one line per bad file."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from jobs.config import ArcsConfigError, parse, parse_repo_config
from jobs.config_model import ArcsConfig, BudgetConfig, PathsConfig, SetupNetwork, Triggers, yaml_keys

FULL = """
triggers: {ci: true, issues: false, comments: true}
label: fix-me
branches: main
setup: [pip install -e ., npm ci]
test: python -m pytest -q
timeout_s: 90
memory_mb: 2048
setup_network: {allow: [npm.example.com, "*.example.org:8443"]}
tier: Small
budget: {iterations: 3, usd: 0.5}
max_prs_per_day: 0
draft: false
pr_labels: bot
paths: {allowed: ["src/**"]}
on_no_fix: revert
dependency_updates: Comment
"""


def test_the_values_of_a_full_file() -> None:
    config = parse(FULL)
    assert config.triggers == Triggers(issues=False)
    assert config.branches == ("main",) and config.pr_labels == ("bot",)
    assert config.setup == "pip install -e . && npm ci" and config.timeout_s == 90.0
    assert config.setup_allow == ("npm.example.com", "*.example.org:8443")
    assert config.tier == "small" and config.budget == BudgetConfig(iterations=3, usd=0.5)
    assert config.paths == PathsConfig(allowed=("src/**",)) and config.on_no_fix == "revert"
    assert config.dependency_updates == "comment" and config.path == ".arcs.yml"


def test_frozen_and_closed() -> None:
    config = ArcsConfig()
    with pytest.raises(ValidationError):
        config.draft = False
    with pytest.raises(ValidationError, match="extra"):
        ArcsConfig(drafts=False)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        ArcsConfig(setup_network=SetupNetwork(allow=("http://x",)))


def test_a_dump_reads_back_to_the_same_value() -> None:
    """What an attempt stores (``model_dump(mode="json")``) is read back unchanged."""
    config = parse(FULL)
    stored = config.model_dump(mode="json")
    assert "path" not in stored and set(stored) == set(yaml_keys())
    assert ArcsConfig.model_validate(stored).model_copy(update={"path": config.path}) == config


def test_path_is_not_a_key_of_the_file() -> None:
    with pytest.raises(ArcsConfigError) as info:
        parse("path: elsewhere.yml\n")
    assert info.value.message == ".arcs.yml: unknown key `path` (did you mean `paths`?)"
    assert info.value.key == "path"


@pytest.mark.parametrize(
    ("text", "message", "key"),
    [
        # the runner keys are checked first, then unknown keys, then each section in order
        ("zzz: 1\ntimeout_s: 0\n", ".arcs.yml: `timeout_s` must be a finite positive number, got 0", "timeout_s"),
        ("tier: huge\nzzz: 1\n", ".arcs.yml: unknown key `zzz` (known: triggers, label, branches, test, "
         "setup, timeout_s, memory_mb, setup_network, tier, budget, max_prs_per_day, max_open_prs, draft, "
         "pr_labels, paths, notify_unrepairable, open_pr_on_partial, flaky, on_no_fix, dependency_updates, "
         "extends, auto_apply, dashboard_issue)", "zzz"),
        ("dependency_updates: yes\n", ".arcs.yml: dependency_updates: expected one of fix, comment, off, "
         "got True", "dependency_updates"),
        ("draft: 3\nbudget: {usd: x}\n", ".arcs.yml: budget.usd: expected a number, got 'x'", "budget.usd"),
        ("budget: {usd: x, nope: 1}\n", ".arcs.yml: unknown key `budget.nope` (known: iterations, usd, wall_s)",
         "budget.nope"),
        ("setup_network: {allow: ['http://x']}\n", ".arcs.yml: `setup_network`: allow-list entry "
         "'http://x': expected host or host:port", "setup_network"),
        ("setup_network: {deny: []}\n", ".arcs.yml: `setup_network` must be a mapping with one key, `allow`",
         "setup_network"),
        ("branches: {a: 1}\n", ".arcs.yml: branches: expected a list of non-empty strings, got {'a': 1}",
         "branches"),
        ("budget: {iterations: 0}\n", ".arcs.yml: budget.iterations: expected a number >= 1, got 0",
         "budget.iterations"),
        ("auto_apply: [format, fmt]\n", ".arcs.yml: auto_apply: expected one of format, lint, template, "
         "revert, llm, got ['format', 'fmt']", "auto_apply"),
        ("dashboard_issue: yes please\n", ".arcs.yml: dashboard_issue: expected true or false, got "
         "'yes please'", "dashboard_issue"),
    ],
)  # fmt: skip
def test_one_line_naming_the_first_bad_key(text: str, message: str, key: str) -> None:
    with pytest.raises(ArcsConfigError) as info:
        parse(text)
    assert (info.value.message, info.value.key) == (message, key)


def test_dependency_updates_default_fix_and_a_bare_off() -> None:
    """YAML 1.1 reads a bare ``off`` as false: that is the choice ``off``, not an error."""
    assert ArcsConfig().dependency_updates == "fix" and parse("label: x\n").dependency_updates == "fix"
    assert parse("dependency_updates: off\n").dependency_updates == "off"
    assert parse("dependency_updates: 'off'\n").dependency_updates == "off"
    assert parse("dependency_updates:\n").dependency_updates == "fix"
    with pytest.raises(ArcsConfigError, match="expected one of fix, comment, off, got 'revert'"):
        parse("dependency_updates: revert\n")


def test_the_lenient_reader_checks_only_the_runner_keys() -> None:
    config = parse_repo_config("test: make test\ntier: huge\nrepair: {x: 1}\n")
    assert config.test == "make test" and dict(config.extra) == {"tier": "huge", "repair": {"x": 1}}
    with pytest.raises(ArcsConfigError, match=r"`memory_mb` must be a positive integer, got 1\.5"):
        parse_repo_config("memory_mb: 1.5\ntier: huge\n")


def test_auto_apply_names_fix_kinds_case_insensitively_and_dashboard_issue_is_opt_in() -> None:
    assert parse("auto_apply: Format\n").auto_apply == ("format",)
    assert parse("auto_apply: [format, LINT]\n").auto_apply == ("format", "lint")
    assert parse("").auto_apply == () and parse("").dashboard_issue is False
    assert parse("dashboard_issue: true\n").dashboard_issue is True
