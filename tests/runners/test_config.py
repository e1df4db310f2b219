"""``.arcs.yml``: known keys, tolerance of unknown ones, one-line errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ArcsError, ConfigError
from jobs.config import RepoConfig, load_repo_config, parse_repo_config


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    assert load_repo_config(tmp_path) == RepoConfig()


def test_known_keys(tmp_path: Path) -> None:
    (tmp_path / ".arcs.yml").write_text(
        "test: python -m pytest -q\nsetup: pip install -e .\ntimeout_s: 900\nmemory_mb: 4096\n",
        encoding="utf-8",
    )
    cfg = load_repo_config(tmp_path)
    assert cfg.test == "python -m pytest -q"
    assert cfg.setup == "pip install -e ."
    assert cfg.timeout_s == 900.0 and isinstance(cfg.timeout_s, float)
    assert cfg.memory_mb == 4096
    assert cfg.path == tmp_path / ".arcs.yml"


def test_yaml_extension_and_setup_list(tmp_path: Path) -> None:
    (tmp_path / ".arcs.yaml").write_text(
        "setup:\n  - pip install -e .\n  - npm ci\ntimeout_s: 1.5\n", encoding="utf-8"
    )
    cfg = load_repo_config(tmp_path)
    assert cfg.setup == "pip install -e . && npm ci"
    assert cfg.timeout_s == 1.5


def test_unknown_keys_are_kept_not_rejected() -> None:
    cfg = parse_repo_config("test: make test\nrepair:\n  max_attempts: 3\nlanguages: [python]\n")
    assert cfg.test == "make test"
    assert cfg.extra == {"repair": {"max_attempts": 3}, "languages": ["python"]}


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_empty_file(text: str) -> None:
    assert parse_repo_config(text).test is None


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("test: 5\n", "`test`"),
        ("test: [a, b]\n", "`test`"),
        ("test: '  '\n", "`test`"),
        ("setup: {a: 1}\n", "`setup`"),
        ("setup: [ok, 3]\n", "`setup`"),
        ("timeout_s: abc\n", "`timeout_s`"),
        ("timeout_s: true\n", "`timeout_s`"),
        ("timeout_s: -1\n", "`timeout_s`"),
        ("memory_mb: 1.5\n", "`memory_mb`"),
        ("memory_mb: 0\n", "`memory_mb`"),
    ],
)
def test_wrong_types_name_the_key(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_repo_config(text)
    assert key in info.value.message
    assert ".arcs.yml" in info.value.message
    assert info.value.exit_code == 2


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    (tmp_path / ".arcs.yml").write_text("test: pytest\nsetup: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_repo_config(tmp_path)
    assert "not valid YAML" in info.value.message
    assert "line" in info.value.message
    assert "\n" not in info.value.message


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
def test_not_a_mapping(text: str) -> None:
    with pytest.raises(ArcsError, match="must be a mapping"):
        parse_repo_config(text)
