"""Organisation defaults: ``extends: <org>/.github`` reads that repository's config as defaults
under the repository's keys, each file validated on its own (an error names the file at fault);
on the worker's path through the real gateway on the strict GitHub double."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.github.gateway import AppGitHubGateway
from bot.settings import Settings
from bot.store.store import Store
from jobs import config as arcs_config
from jobs import pipeline
from jobs.attempt import checkout_config
from jobs.config import ArcsConfigError, merge
from runners.fake import FakeRunner
from tests.fakes.github_double import AppKey, FakeClock, GitHubDouble
from tests.jobs.test_change_signal_e2e import REPO, _delivery, _tree, double, signed_run
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


def test_which_keys_the_org_defaults_set_is_known() -> None:
    config = _load(
        "extends: acme/.github\ntier: small\nbudget: {usd: 1.0}\nlabel:\n",
        {".github/arcs.yml": "tier: large\nbudget: {usd: 3.0, iterations: 4}\nlabel: fix-me\ndraft: false\n"},
    )
    assert config.defaults_file == "acme/.github:.github/arcs.yml"
    assert config.inherited == ("budget.iterations", "label", "draft")  # `label:` (null) keeps the default
    assert (config.tier, config.budget.usd, config.budget.iterations, config.label) == (
        "small",
        1.0,
        4,
        "fix-me",
    )
    plain = _load("tier: small\n", {".github/arcs.yml": "draft: false\n"})
    assert plain.defaults_file is None and plain.inherited == ()  # no `extends`: nothing followed
    assert "inherited" not in arcs_config.ArcsConfig.model_json_schema()["properties"]


def test_the_worker_records_which_org_defaults_applied(
    double: GitHubDouble, settings: Settings, test_app_key: AppKey, fake_clock: FakeClock, tmp_path: Path
) -> None:
    """A red run on the double: the attempt's ``org_defaults`` notice names the file and the keys
    (what the dashboard's repository page shows, tests/bot/dashboard/test_org_defaults_page.py)."""
    inst = double.add_installation("acme")
    tree = {name: text for name, text in _tree().items() if name != ".arcs.yml"}
    own = "extends: acme/.github\ntest: pytest -q\nbranches: ['release/*']\n"
    double.add_repo(REPO, {**tree, ".arcs.yml": own}, installation=inst)
    double.add_repo(
        ORG, {".github/arcs.yml": "tier: small\nbranches: [main]\ndraft: false\n"}, installation=inst
    )
    sha = str(double.branch_sha(REPO, "main"))
    red = double.add_workflow_run(REPO, head_sha=sha, head_branch="main", jobs=[("test", "failure", "boom")])
    payload = _delivery(double, inst.id, red.id, red.workflow_id, sha)
    with signed_run(double, settings, test_app_key, fake_clock, tmp_path, payload, FakeRunner()) as (
        deps,
        job,
        _,
    ):
        assert pipeline.dispatch(deps, job) == "skipped"  # the repository's own `branches` wins
        (attempt,) = deps.store.attempts(repo=REPO, limit=5)
        store = deps.store
        assert isinstance(store, Store)
        (notice,) = [e for e in store.events(kind="notice") if (e.data or {}).get("policy") == "org_defaults"]
    assert notice.attempt_id == attempt.id and notice.repo == REPO
    assert notice.data == {
        "policy": "org_defaults",
        "extends": ORG,
        "file": "acme/.github:.github/arcs.yml",
        "inherited": ["tier", "draft"],
    }
    assert notice.message == "organisation defaults from acme/.github:.github/arcs.yml: tier, draft"
