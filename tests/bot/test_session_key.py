"""The dashboard's session key: one per deployment home, made once, shared by every worker."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from pydantic import SecretStr

from bot.settings import Settings
from bot.web.session_key import shared_session_key, with_session_secret


def _key_of(home: str) -> str:
    return shared_session_key(Path(home))


def test_workers_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with multiprocessing.get_context("spawn").Pool(8) as pool:
        keys = pool.map(_key_of, [str(home)] * 16)
    assert len(set(keys)) == 1 and len(keys[0]) >= 43
    key_file = home / "session.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in home.iterdir()] == ["session.key"]  # no temporary files left
    assert shared_session_key(home) == keys[0]  # and a restart keeps it


def test_a_configured_secret_wins(settings: Settings) -> None:
    given = settings.model_copy(update={"session_secret": SecretStr("operator-secret")})
    assert with_session_secret(given) is given
    assert not (settings.home / "session.key").exists()


def test_an_unset_secret_becomes_the_shared_key(settings: Settings) -> None:
    shared = with_session_secret(settings)
    assert shared.session_secret is not None
    assert shared.session_secret.get_secret_value() == (settings.home / "session.key").read_text().strip()


def test_a_readable_key_file_is_made_private(tmp_path: Path) -> None:
    key = shared_session_key(tmp_path)
    (tmp_path / "session.key").chmod(0o644)
    assert shared_session_key(tmp_path) == key
    assert (tmp_path / "session.key").stat().st_mode & 0o777 == 0o600
