"""The App's ``.arcs.yml`` schema: defaults, every key, errors that name the key."""

from __future__ import annotations

import pytest

from bot.errors import ConfigError
from jobs.config import ArcsConfig, ArcsConfigError
from jobs.config import load as load_arcs_config
from jobs.config import parse as parse_arcs_config
from jobs.repair.budget import Budget

FULL = """
triggers:
  ci: true
  issues: false
  comments: true
label: arcs-fix
branches: [main, "release/*"]
setup: [pip install -e ., pip install pytest]
test: python -m pytest -q
timeout_s: 600
memory_mb: 2048
tier: small
budget: {iterations: 3, usd: 0.5, wall_s: 900}
max_prs_per_day: 2
max_open_prs: 1
draft: false
pr_labels: [arcs, bot]
paths:
  allowed: ["src/**", "tests/**"]
  denied: ["src/vendor/**"]
notify_unrepairable: true
"""


def test_defaults_without_a_file() -> None:
    config = load_arcs_config(lambda path: None)
    assert config == ArcsConfig()
    assert config.triggers.ci and config.triggers.issues and config.triggers.comments
    assert config.draft is True and config.label == "arcs" and config.tier == "auto"
    assert config.watches("any/branch")
    assert not config.paths.allows(".github/workflows/ci.yml")
    assert config.paths.allows("src/app.py")
    assert parse_arcs_config("") == ArcsConfig(path=".arcs.yml")


def test_every_key() -> None:
    config = parse_arcs_config(FULL)
    assert config.triggers.issues is False and config.triggers.ci is True
    assert config.label == "arcs-fix"
    assert config.watches("main") and config.watches("release/1.2") and not config.watches("feature/x")
    assert config.setup == "pip install -e . && pip install pytest"
    assert config.test == "python -m pytest -q"
    assert config.timeout_s == 600.0 and config.memory_mb == 2048
    assert config.tier == "small"
    assert config.budget.apply(Budget()) == Budget(iterations=3, usd=0.5, wall_s=900.0)
    assert (config.max_prs_per_day, config.max_open_prs, config.draft) == (2, 1, False)
    assert config.pr_labels == ("arcs", "bot")
    assert config.paths.allows("src/app.py") and not config.paths.allows("src/vendor/x.py")
    assert not config.paths.allows("docs/readme.md")
    assert config.notify_unrepairable is True
    runner = config.repo_config()
    assert runner.test == "python -m pytest -q" and runner.memory_mb == 2048


def test_yaml_alternate_name_is_read() -> None:
    files = {".arcs.yaml": "tier: large\n"}
    config = load_arcs_config(files.get)
    assert config.tier == "large" and config.path == ".arcs.yaml"


def test_dot_github_arcs_yml_is_read_and_two_files_are_an_error() -> None:
    config = load_arcs_config({".github/arcs.yml": "tier: small\n"}.get)
    assert config.tier == "small" and config.path == ".github/arcs.yml"
    with pytest.raises(ArcsConfigError) as info:
        load_arcs_config({".arcs.yml": "", ".arcs.yaml": "tier: large\n"}.get)
    assert info.value.message.startswith(".arcs.yml and .arcs.yaml both configure ARCS")
    assert info.value.key is None and info.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        ("budget:\n  usd: lots\n", "budget.usd", "budget.usd: expected a number, got 'lots'"),
        ("budget:\n  iterations: 2.5\n", "budget.iterations", "budget.iterations: expected a whole number"),
        ("budget: 3\n", "budget", "budget: expected a mapping"),
        ("triggers:\n  ci: maybe\n", "triggers.ci", "triggers.ci: expected true or false, got 'maybe'"),
        ("draft: 1\n", "draft", "draft: expected true or false"),
        ("max_prs_per_day: -1\n", "max_prs_per_day", "expected a number >= 0"),
        ("max_open_prs: yes\n", "max_open_prs", "expected a whole number, got True"),
        ("tier: huge\n", "tier", "tier: expected one of 0, small, medium, large, auto"),
        ("label: ''\n", "label", "label: expected a non-empty string"),
        ("branches: [main, 3]\n", "branches", "branches: expected a list of non-empty strings"),
        ("paths:\n  allowed: src\n  denied: [1]\n", "paths.denied", "paths.denied: expected a list"),
        ("test: 5\n", "test", "`test` must be a command"),
    ],
)
def test_errors_name_the_key(text: str, key: str, message: str) -> None:
    with pytest.raises(ArcsConfigError) as info:
        parse_arcs_config(text)
    assert info.value.key == key
    assert message in info.value.message
    assert info.value.message.startswith(".arcs.yml")
    assert isinstance(info.value, ConfigError) and info.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tigger:\n  ci: false\n", "unknown key `tigger` (did you mean `triggers`?)"),
        ("budget:\n  dollars: 3\n", "unknown key `budget.dollars` (known: iterations, usd, wall_s)"),
        (
            "triggers:\n  comment: false\n",
            "unknown key `triggers.comment` (did you mean `triggers.comments`?)",
        ),
        (
            "max_pr_per_day: 3\nzzz: 1\n",
            "unknown key `max_pr_per_day` and 1 more (did you mean `max_prs_per_day`?)",
        ),
    ],
)
def test_unknown_keys_are_errors_with_a_suggestion(text: str, expected: str) -> None:
    with pytest.raises(ArcsConfigError) as info:
        parse_arcs_config(text)
    assert expected in info.value.message


def test_malformed_yaml_and_non_mapping() -> None:
    with pytest.raises(ArcsConfigError, match="not valid YAML at line"):
        parse_arcs_config("a: [1,\n")
    with pytest.raises(ArcsConfigError, match="must be a mapping"):
        parse_arcs_config("- a\n- b\n")


def test_null_sections_mean_defaults() -> None:
    config = parse_arcs_config("triggers:\nbudget:\npaths:\n")
    assert config.triggers == ArcsConfig().triggers
    assert config.budget.apply(Budget()) == Budget()
    assert config.paths == ArcsConfig().paths
