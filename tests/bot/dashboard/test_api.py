"""The read-only JSON API: 401 without a login, 404 for what the viewer cannot see, the seed's numbers."""

from __future__ import annotations

import pytest

from tests.bot.dashboard.conftest import BOB, Client
from tests.bot.dashboard.seed import OCTO, OCTO_REPOS, OTHER_REPOS, Expected

PATHS = ["/api/orgs", "/api/orgs/octo-org", "/api/orgs/octo-org/repos", "/api/attempts/1"]


def same_numbers(doc: dict[str, object], want: Expected) -> None:
    for key in ("attempts", "fixed", "finished", "prs_opened", "prs_merged", "prs_closed"):
        assert doc[key] == getattr(want, key), key
    for key in ("repair_rate", "accepted_fix_rate", "usd_per_fix", "total_usd", "median_time_to_pr_s"):
        value = getattr(want, key)
        assert doc[key] == (None if value is None else pytest.approx(value, abs=1e-3)), key


@pytest.mark.parametrize("path", PATHS)
def test_without_a_viewer_the_api_answers_401(client: Client, path: str) -> None:
    response = client.as_(None).http.get(path)
    assert response.status_code == 401
    assert response.json() == {"error": "login required"}


def test_orgs_lists_the_viewers_owners_with_totals(client: Client) -> None:
    response = client.http.get("/api/orgs")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "private, no-store"
    doc = response.json()
    assert [o["owner"] for o in doc["orgs"]] == [OCTO]
    org = doc["orgs"][0]
    assert org["repos"] == 3 and org["admin"] is True
    same_numbers(org["totals"], client.seeded.info.org[OCTO])
    assert doc["weeks"] == 12 and doc["since"] == "2024-12-23T00:00:00+00:00"
    assert client.as_(BOB).http.get("/api/orgs").json()["orgs"][0]["admin"] is False


def test_org_overview_and_weekly_series(client: Client) -> None:
    info = client.seeded.info
    doc = client.http.get("/api/orgs/octo-org").json()
    same_numbers(doc["totals"], info.org[OCTO])
    assert len(doc["weeks"]) == 12
    assert [w["week"] for w in doc["weeks"]][-2:] == ["2025-W10", "2025-W11"]
    assert sum(w["attempts"] for w in doc["weeks"]) == info.org[OCTO].attempts
    assert [r["repo"] for r in doc["repos"]] == sorted(OCTO_REPOS)
    assert {c["failure_class"] for c in doc["failure_classes"]} == set(info.classes[OCTO])
    assert [p["repo"] for p in doc["policies"]] == [""] and doc["policies"][0]["monthly_usd"] == 100.0
    short = client.http.get("/api/orgs/octo-org?weeks=2").json()
    assert len(short["weeks"]) == 2 and short["totals"]["attempts"] < info.org[OCTO].attempts
    assert len(client.http.get("/api/orgs/octo-org?weeks=9999").json()["weeks"]) == 104
    assert len(client.http.get("/api/orgs/octo-org?weeks=zero").json()["weeks"]) == 12


def test_org_repos(client: Client) -> None:
    info = client.seeded.info
    doc = client.http.get("/api/orgs/OCTO-ORG/repos").json()
    assert doc["owner"] == OCTO
    for row in doc["repos"]:
        same_numbers(row, info.repo[row["repo"]])
    assert len(doc["repos"]) == 3


def test_attempt_detail_without_files_or_secrets(client: Client) -> None:
    info = client.seeded.info
    response = client.http.get(f"/api/attempts/{info.traced_attempt_id}")
    assert response.status_code == 200
    doc = response.json()
    assert doc["id"] == info.traced_attempt_id and doc["status"] == "fixed"
    assert doc["pull_request"]["state"] == "merged" and doc["pull_request"]["number"] == 41
    assert doc["trace"]["trace_id"] == "seed-trace-0001" and "markdown" not in doc["trace"]
    assert doc["trace"]["tests_after"]["passed"] == 3
    assert [e["kind"] for e in doc["events"]] == ["notice"]
    assert "files" not in doc and "SECRET FILE CONTENTS" not in response.text
    assert "trace_path" not in doc


@pytest.mark.parametrize(
    "path",
    ["/api/orgs/other-org", "/api/orgs/other-org/repos", "/api/orgs/no-such-org", "/api/attempts/999999"],
)
def test_invisible_and_missing_answer_the_same_404(client: Client, path: str) -> None:
    response = client.http.get(path)
    assert response.status_code == 404
    assert response.json() == {"error": "not found"}


def test_another_orgs_attempt_is_404(client: Client) -> None:
    other = client.seeded.info.attempt_ids[OTHER_REPOS[0]][0]
    response = client.http.get(f"/api/attempts/{other}")
    assert response.status_code == 404 and response.json() == {"error": "not found"}
    assert "secret" not in response.text
