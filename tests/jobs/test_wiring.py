"""``jobs.wiring``: settings -> the model configuration and the default parallelism."""

from __future__ import annotations

import os

import pytest
from pydantic import SecretStr

from bot.settings import Settings
from jobs.wiring import default_jobs, llm_config


def test_llm_config_reads_key_model_and_base_url(settings: Settings) -> None:
    configured = settings.model_copy(
        update={
            "anthropic_api_key": SecretStr("sk-test"),
            "model": "claude-x",
            "anthropic_base_url": "http://127.0.0.1:9",
        }
    )
    cfg = llm_config(configured)
    assert (cfg.api_key, cfg.model, cfg.base_url, cfg.configured) == (
        "sk-test",
        "claude-x",
        "http://127.0.0.1:9",
        True,
    )
    assert not llm_config(settings.model_copy(update={"anthropic_api_key": None})).configured


@pytest.mark.parametrize(("cpus", "want"), [(None, 1), (1, 1), (2, 2), (4, 4), (64, 4)])
def test_default_jobs_is_at_most_4_and_at_most_the_cpus(
    monkeypatch: pytest.MonkeyPatch, cpus: int | None, want: int
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    assert default_jobs() == want
