"""App JWT and installation tokens: narrowed, cached, refreshed before expiry, revoked, never shown."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest
import structlog
from pydantic import SecretStr

from bot.errors import ConfigError
from bot.github import GitHubError
from bot.github.auth import (
    COMMENT_PERMISSIONS,
    JWT_LIFETIME_S,
    READ_PERMISSIONS,
    AppCredentials,
    InstallationToken,
    create_app_jwt,
)
from bot.github.client import GitHubApp
from bot.settings import load_settings
from tests.fakes.github_double import TEST_APP_ID, AppKey, FakeClock, GitHubDouble


@pytest.fixture
def installation(github_double: GitHubDouble) -> int:
    inst = github_double.add_installation("acme")
    github_double.add_repo("acme/widgets", {"a.py": "x = 1\n"}, installation=inst)
    github_double.add_repo("acme/gadgets", {"b.py": "y = 1\n"}, installation=inst)
    return inst.id


def test_credentials_from_settings(tmp_path: Path, test_app_key: AppKey) -> None:
    key_file = tmp_path / "app.pem"
    key_file.write_text(test_app_key.private_pem)
    creds = AppCredentials.from_settings(
        load_settings({"ARCS_APP_ID": "7", "ARCS_PRIVATE_KEY_PATH": str(key_file)})
    )
    assert creds.app_id == "7"
    assert creds.private_key.get_secret_value() == test_app_key.private_pem
    assert "PRIVATE" not in repr(creds)
    inline = AppCredentials.from_settings(
        load_settings({"ARCS_APP_ID": "7", "ARCS_PRIVATE_KEY": test_app_key.private_pem})
    )
    assert inline == creds
    with pytest.raises(ConfigError, match="ARCS_APP_ID"):
        AppCredentials.from_settings(load_settings({}))
    with pytest.raises(ConfigError, match="ARCS_PRIVATE_KEY"):
        AppCredentials.from_settings(load_settings({"ARCS_APP_ID": "7"}))
    with pytest.raises(ConfigError, match="cannot read"):
        AppCredentials.from_settings(
            load_settings({"ARCS_APP_ID": "7", "ARCS_PRIVATE_KEY_PATH": str(tmp_path / "missing.pem")})
        )


def test_app_jwt_is_rs256_short_lived_and_backdated(
    app_credentials: AppCredentials, test_app_key: AppKey
) -> None:
    now = 1_700_000_000.0
    token = create_app_jwt(app_credentials, now=now)
    claims = jwt.decode(
        token,
        test_app_key.public_pem,
        algorithms=["RS256"],
        options={"verify_exp": False, "verify_iat": False},
    )
    assert claims["iss"] == TEST_APP_ID
    assert claims["iat"] == int(now) - 60
    assert claims["exp"] - claims["iat"] <= 600
    assert claims["exp"] == int(now) + JWT_LIFETIME_S


def test_bad_private_key_is_a_config_error_without_the_key() -> None:
    secret = "-----BEGIN RSA PRIVATE KEY-----\nnot-a-key-but-secret-material\n-----END RSA PRIVATE KEY-----"
    with pytest.raises(ConfigError) as info:
        create_app_jwt(AppCredentials("1", SecretStr(secret)), now=0)
    assert "secret-material" not in str(info.value)


def test_token_is_narrowed_to_one_repository_and_the_permission_subset(
    github_app: GitHubApp, github_double: GitHubDouble, installation: int
) -> None:
    with github_app.installation_tokens(
        installation, repository="acme/widgets", permissions=READ_PERMISSIONS
    ) as tokens:
        value = tokens.token().get_secret_value()
    [mint] = github_double.mutations_matching("POST", r"/access_tokens$")
    assert mint.body == {"repositories": ["widgets"], "permissions": dict(READ_PERMISSIONS)}
    granted = github_double.tokens[value]
    assert granted.repositories == {"acme/widgets"}
    assert granted.permissions == dict(READ_PERMISSIONS)


def test_token_is_cached_refreshed_before_expiry_and_all_revoked_at_close(
    github_app: GitHubApp, github_double: GitHubDouble, installation: int, fake_clock: FakeClock
) -> None:
    tokens = github_app.installation_tokens(
        installation, repository="acme/widgets", permissions=COMMENT_PERMISSIONS, refresh_margin_s=600
    )
    first = tokens.token().get_secret_value()
    assert tokens.token().get_secret_value() == first
    assert tokens.minted == 1
    fake_clock.advance(3600 - 601)  # still more than the margin left
    assert tokens.token().get_secret_value() == first
    fake_clock.advance(2)  # now inside the refresh margin
    second = tokens.token().get_secret_value()
    assert second != first and tokens.minted == 2
    # The old token still works until the end (a push may be using it) ...
    assert not github_double.tokens[first].revoked
    tokens.close()
    # ... and both are revoked at the end, each with its own token.
    assert github_double.tokens[first].revoked and github_double.tokens[second].revoked
    revokes = github_double.mutations_matching("DELETE", r"^/installation/token$")
    assert sorted(m.token or "" for m in revokes) == sorted([first, second])
    tokens.close()  # idempotent
    assert len(github_double.mutations_matching("DELETE", r"^/installation/token$")) == 2
    with pytest.raises(GitHubError, match="revoked"):
        tokens.token()


def test_expired_tokens_are_not_revoked_again(
    github_app: GitHubApp, github_double: GitHubDouble, installation: int, fake_clock: FakeClock
) -> None:
    tokens = github_app.installation_tokens(installation, repository="acme/widgets")
    tokens.token()
    fake_clock.advance(4000)
    tokens.close()
    assert github_double.mutations_matching("DELETE", r"^/installation/token$") == []


def test_jwt_is_renewed_as_the_clock_moves(
    github_app: GitHubApp, github_double: GitHubDouble, installation: int, fake_clock: FakeClock
) -> None:
    assert github_app.repo_installation_id("acme", "widgets") == installation
    fake_clock.advance(3 * 3600)
    assert github_app.repo_installation_id("acme", "gadgets") == installation
    assert github_double.auth_failures == []


def test_missing_permission_is_a_clear_error(
    github_app: GitHubApp, github_double: GitHubDouble, installation: int
) -> None:
    github_double.installations[installation].permissions.pop("checks")
    tokens = github_app.installation_tokens(
        installation, repository="acme/widgets", permissions=COMMENT_PERMISSIONS
    )
    with pytest.raises(GitHubError, match="422") as info:
        tokens.token()
    assert "checks" in str(info.value)


def test_secrets_never_in_repr_or_logs(
    github_app: GitHubApp, github_double: GitHubDouble, installation: int, app_credentials: AppCredentials
) -> None:
    with structlog.testing.capture_logs() as logs:
        tokens = github_app.installation_tokens(installation, repository="acme/widgets")
        value = tokens.token().get_secret_value()
        client = github_app.installation(installation, repository="acme/widgets")
        client.gh.rest.repos.get("acme", "widgets")
        texts = [
            repr(tokens),
            str(tokens),
            repr(github_app),
            repr(client),
            repr(InstallationToken(token=SecretStr(value), expires_at=0)),
            repr(app_credentials),
        ]
        client.close()
        tokens.close()
    texts += [repr(entry) for entry in logs]
    assert any("github.token.minted" in text for text in texts)
    for text in texts:
        assert value not in text
        assert "PRIVATE KEY" not in text
