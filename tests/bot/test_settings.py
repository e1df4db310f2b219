from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.settings import DEFAULT_EXCLUDES, load_settings


def test_defaults_do_not_read_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCS_EMBEDDER", "hash")
    settings = load_settings({})
    assert settings.embedder == "onnx"
    assert settings.home == Path.home() / ".arcs"
    assert settings.qdrant_url is None
    assert settings.exclude == DEFAULT_EXCLUDES


def test_reads_prefixed_variables() -> None:
    settings = load_settings(
        {"ARCS_HOME": "/tmp/x", "ARCS_QDRANT_URL": "http://q:6333", "ARCS_EXCLUDE": "a/, b/*.py ,"}
    )
    assert settings.home == Path("/tmp/x")
    assert settings.qdrant_path == Path("/tmp/x/qdrant")
    assert settings.qdrant_url == "http://q:6333"
    assert settings.exclude == ("a/", "b/*.py")


def test_empty_value_means_default() -> None:
    assert load_settings({"ARCS_QDRANT_URL": ""}).qdrant_url is None


def test_invalid_value_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="ARCS_EMBEDDER"):
        load_settings({"ARCS_EMBEDDER": "gpt"})
    with pytest.raises(ConfigError, match="ARCS_MAX_FILE_BYTES"):
        load_settings({"ARCS_MAX_FILE_BYTES": "lots"})


def test_settings_are_frozen() -> None:
    settings = load_settings({})
    with pytest.raises(Exception, match="frozen"):
        settings.embedder = "hash"  # type: ignore[misc]


def test_anthropic_variables_are_read_without_prefix_and_kept_secret() -> None:
    settings = load_settings({"ANTHROPIC_API_KEY": "sk-test-123", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert settings.anthropic_api_key is not None
    assert settings.anthropic_api_key.get_secret_value() == "sk-test-123"
    assert "sk-test-123" not in repr(settings)
    assert settings.anthropic_base_url == "http://127.0.0.1:9"
    # The prefixed name wins when both are set.
    both = load_settings({"ANTHROPIC_API_KEY": "a", "ARCS_ANTHROPIC_API_KEY": "b"})
    assert both.anthropic_api_key is not None
    assert both.anthropic_api_key.get_secret_value() == "b"


def test_database_defaults_to_sqlite_under_home() -> None:
    settings = load_settings({"ARCS_HOME": "/srv/arcs"})
    assert settings.sqlalchemy_url == "sqlite:////srv/arcs/arcs.db"
    assert load_settings({"ARCS_DATABASE_URL": "postgresql://x/y"}).sqlalchemy_url == "postgresql://x/y"


def test_sandbox_limits_are_plain_values_and_zero_turns_one_off() -> None:
    limits = load_settings({}).sandbox_limits()
    assert (limits.disk_mb, limits.cpus, limits.memory_mb, limits.processes, limits.total_processes) == (
        4096,
        2.0,
        4096,
        512,
        4096,
    )
    off = load_settings(
        {
            "ARCS_SANDBOX_DISK_MB": "0",
            "ARCS_SANDBOX_CPUS": "0",
            "ARCS_SANDBOX_MEMORY_MB": "0",
            "ARCS_SANDBOX_TOTAL_PROCESSES": "0",
            "ARCS_SANDBOX_PROCESSES": "64",
            "ARCS_SANDBOX_CGROUP": "/sys/fs/cgroup/arcs.slice",
        }
    ).sandbox_limits()
    assert (off.disk_mb, off.cpus, off.memory_mb, off.total_processes, off.processes) == (
        None,
        None,
        None,
        None,
        64,
    )
    assert off.cgroup_parent == Path("/sys/fs/cgroup/arcs.slice")


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("ARCS_SANDBOX_MEMORY_MB", "8", "at least 16 MiB"),
        ("ARCS_SANDBOX_CPUS", "-1", "greater than or equal to 0"),
        ("ARCS_SANDBOX_PROCESSES", "1", "greater than or equal to 2"),
        ("ARCS_SANDBOX_TOTAL_PROCESSES", "100", "at least ARCS_SANDBOX_PROCESSES (512)"),
        ("ARCS_SANDBOX_CGROUP", "arcs.slice", "absolute path"),
        ("ARCS_SANDBOX_DISK_MB", "lots", "valid integer"),
    ],
)
def test_bad_sandbox_limits_name_the_variable(variable: str, value: str, says: str) -> None:
    with pytest.raises(ConfigError, match=variable) as caught:
        load_settings({variable: value})
    assert says in str(caught.value) and "\n" not in str(caught.value)
