"""The repository page shows which organisation defaults (``extends``) apply (issue #28, item 1),
from the ``org_defaults`` notice the worker records when it reads ``.arcs.yml``
(tests/jobs/test_config_extends.py records one on the strict GitHub double)."""

from __future__ import annotations

from jobs.attempt import org_defaults_notice
from jobs.config import load
from tests.bot.dashboard.conftest import Client
from tests.bot.dashboard.seed import OCTO

REPO = f"{OCTO}/api"
PAGE = f"/orgs/{OCTO}/repos/api"


def record(client: Client, own: str, org: str, attempt_id: int | None = None) -> None:
    """What the worker records for a file ``own`` extending defaults ``org``."""
    config = load({".arcs.yml": own}.get, org=lambda _repo: {".github/arcs.yml": org}.get)
    notice = org_defaults_notice(config)
    assert notice is not None
    message, data = notice
    client.seeded.store.record_event("notice", message, attempt_id=attempt_id, repo=REPO, data=data)


def test_no_extends_no_section(fresh_client: Client) -> None:
    html = fresh_client.http.get(PAGE).text
    assert "Organisation defaults" not in html


def test_the_last_recorded_defaults_are_shown_with_their_keys(fresh_client: Client) -> None:
    attempt = fresh_client.seeded.store.attempts(repo=REPO, limit=1)[0]
    record(fresh_client, f"extends: {OCTO}/.github\ntier: small\n", "tier: large\ndraft: false\n")
    record(
        fresh_client,
        f"extends: {OCTO}/.github\nbudget: {{usd: 1}}\n",
        "tier: large\nbudget: {usd: 3, iterations: 2}\n",
        attempt_id=attempt.id,
    )
    fresh_client.seeded.store.record_event(
        "notice", "something else", repo=REPO, data={"policy": "auto_apply"}
    )
    answer = fresh_client.http.get(PAGE)
    assert answer.status_code == 200
    html = answer.text
    assert '<h2 id="org-defaults">Organisation defaults</h2>' in html
    assert f"<code>extends: {OCTO}/.github</code>" in html
    assert f"<code>{OCTO}/.github:.github/arcs.yml</code>" in html
    assert "<li><code>tier</code></li><li><code>budget.iterations</code></li>" in html  # the newest notice
    assert "<code>draft</code>" not in html
    assert f'<a href="/attempts/{attempt.id}">attempt #{attempt.id}</a>' in html


def test_defaults_the_repository_fully_overrides_say_so(fresh_client: Client) -> None:
    record(fresh_client, f"extends: {OCTO}/.github\ntier: small\n", "tier: large\n")
    html = fresh_client.http.get(PAGE).text
    assert "None applied: this repository sets every key the defaults set." in html


def test_another_repositorys_defaults_are_not_shown(fresh_client: Client) -> None:
    config = load(
        {".arcs.yml": f"extends: {OCTO}/.github\n"}.get, org=lambda _repo: {".arcs.yml": "tier: large\n"}.get
    )
    notice = org_defaults_notice(config)
    assert notice is not None
    fresh_client.seeded.store.record_event("notice", notice[0], repo=f"{OCTO}/web", data=notice[1])
    assert "Organisation defaults" not in fresh_client.http.get(PAGE).text
    assert "Organisation defaults" in fresh_client.http.get(f"/orgs/{OCTO}/repos/web").text
