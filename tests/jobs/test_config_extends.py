"""Organisation defaults: ``extends: <org>/.github`` reads that repository's config as defaults
under the repository's keys, each file validated on its own (an error names the file at fault);
on the worker's path through the real gateway on the strict GitHub double."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.github.gateway import AppGitHubGateway
from bot.settings import Settings
from jobs import config as arcs_config
from jobs.attempt import checkout_config
from jobs.config import ArcsConfigError, merge
from tests.fakes.github_double import AppKey, FakeClock, GitHubDouble
from tests.jobs.test_change_signal_e2e import double
from tests.jobs.test_config_location_e2e import _red_run

__all__ = ["double"]  # the fixture, imported

ORG = "acme/.github"


def _load(own: str, org_files: dict[str, str] | None) -> arcs_config.ArcsConfig:
    def org(repo: str) -> arcs_config.Reader:
        assert repo == ORG
        return (org_files or {}).get

    return arcs_config.load({".arcs.yml": own}.get, org=org if org_files is not None else None)


def test_the_repository_keys_win_section_by_section() -> None:
    org = {
        ".github/arcs.yml": "tier: small\ndraft: false\nbudget: {usd: 1.5, iterations: 4}\nbranches: [main]\n"
    }
    config = _load("extends: acme/.github\ntier: large\nbudget: {iterations: 2}\nbranches: [dev]\n", org)
    assert (config.tier, config.draft, config.branches) == ("large", False, ("dev",))
    assert (config.budget.usd, config.budget.iterations) == (1.5, 2)
    assert config.extends == ORG and config.path == ".arcs.yml"


def test_merge_keeps_defaults_under_nulls_and_replaces_lists() -> None:
    merged = merge(
        {"label": "fix", "paths": {"denied": ["a/"]}}, {"label": None, "paths": {"allowed": ["b/"]}}
    )
    assert merged == {"label": "fix", "paths": {"denied": ["a/"], "allowed": ["b/"]}}


def test_without_an_org_reader_extends_is_validated_not_followed() -> None:
    config = _load("extends: acme/.github\ntier: large\n", None)
    assert config.tier == "large" and config.extends == ORG
    with pytest.raises(ArcsConfigError) as info:
        _load("extends: acme/other\n", None)
    assert info.value.message == (
        ".arcs.yml: extends: expected <org>/.github (the organisation's .github repository), got 'acme/other'"
    )
    assert info.value.key == "extends"


@pytest.mark.parametrize(
    ("org_files", "message"),
    [
        (
            {".github/arcs.yml": "tier: huge\n"},
            "acme/.github:.github/arcs.yml: tier: expected one of 0, small, medium, large, auto, got 'huge'",
        ),
        (
            {".github/arcs.yml": "extends: acme/.github\n"},
            "acme/.github:.github/arcs.yml: extends: organisation defaults extend nothing",
        ),
        (
            {},
            ".arcs.yml: extends: acme/.github has no .arcs.yml or .arcs.yaml or .github/arcs.yml",
        ),
        (
            {".arcs.yml": "", ".github/arcs.yml": ""},
            "acme/.github:.arcs.yml and acme/.github:.github/arcs.yml both configure ARCS; keep one of them "
            "(ARCS reads a single file)",
        ),
    ],
    ids=["invalid", "chained", "missing", "two"],
)
def test_an_org_file_error_names_that_file(org_files: dict[str, str], message: str) -> None:
    with pytest.raises(ArcsConfigError) as info:
        _load("extends: acme/.github\n", org_files)
    assert info.value.message == message


def test_the_worker_applies_the_org_defaults(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    config = {".arcs.yml": "extends: acme/.github\ntest: pytest -q\n"}
    org = {".github/arcs.yml": "branches: ['release/*']\n"}
    outcome, reason, check, runner = _red_run(
        double, settings, test_app_key, fake_clock, tmp_path, config, org=org
    )
    assert outcome == "skipped" and check is None and runner.calls == []
    assert reason == "branch main is not in .arcs.yml `branches`"  # the organisation's default


def test_an_invalid_org_file_refuses_the_repair_naming_it(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    config = {".arcs.yml": "extends: acme/.github\ntest: pytest -q\n"}
    org = {".github/arcs.yml": "budget: {usd: lots}\n"}
    outcome, _reason, check, runner = _red_run(
        double, settings, test_app_key, fake_clock, tmp_path, config, org=org
    )
    assert outcome == "refused" and check is not None and runner.calls == []
    summary = str(check["output"]["summary"])  # type: ignore[index]
    assert "acme/.github:.github/arcs.yml: budget.usd: expected a number, got 'lots'" in summary


def test_a_command_repair_reads_its_checkout_with_the_org_defaults(tmp_path: Path) -> None:
    """``/arcs`` commands read the checkout's file (attempt.checkout_config) through the gateway's
    ``org_reader``, the name attempt.repair looks up on the App's gateway."""
    (tmp_path / ".arcs.yml").write_text("extends: acme/.github\ntest: make test\n", encoding="utf-8")
    config = checkout_config(tmp_path, {ORG: {".github/arcs.yml": "tier: small\n"}.get}.__getitem__)
    assert (config.tier, config.test, config.extends) == ("small", "make test", ORG)
    assert checkout_config(tmp_path).tier == "auto"  # no reader: `extends` is not followed
    assert callable(getattr(AppGitHubGateway, "org_reader", None))
