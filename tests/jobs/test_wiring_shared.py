"""``arcs fix`` and the worker take their defaults from the same functions of :mod:`jobs.wiring`:
the parallelism (:func:`jobs.wiring.default_parallel`) and the model with its key
(:func:`jobs.wiring.llm_config`, the one place that reads the key)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.settings import Settings
from jobs.config import ArcsConfig
from jobs.fix import FixRequest
from jobs.plan import LLMRef, RepairPlan, RepairRequest, plan_for
from jobs.repair_service import FixRepairService
from jobs.wiring import LLMConfig, default_parallel, llm_config


@pytest.mark.parametrize("cpus", [1, 2, 3])
def test_arcs_fix_and_the_worker_default_to_the_same_parallelism(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: int
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    worker = FixRepairService(settings, toolchains=(), use_index=False).defaults.parallel
    assert FixRequest(repo=tmp_path).config.parallel == worker == default_parallel() == cpus


def test_an_explicit_parallelism_still_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.repair.loop_config import LoopConfig

    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert FixRequest(repo=tmp_path, config=LoopConfig(parallel=3)).config.parallel == 3


def _plan(service: FixRepairService, workdir: Path) -> RepairPlan:
    request = RepairRequest(
        kind="ci", repo="octo/ages", workdir=workdir, head_sha="a" * 40, attempt_id=1, trace_dir=workdir
    )
    return plan_for(request, ArcsConfig(), service.defaults)


def test_the_repair_service_runs_on_the_injected_llm_config_not_the_settings(
    settings: Settings, tmp_path: Path
) -> None:
    unkeyed = settings.model_copy(update={"anthropic_api_key": None, "model": "from-settings"})
    given = LLMConfig(api_key="sk-injected-9", model="claude-x", base_url="http://127.0.0.1:9")
    service = FixRepairService(unkeyed, toolchains=(), use_index=False, parallel=1, llm_config=given)
    assert service.has_llm and service.defaults.llm == LLMRef("claude-x", "http://127.0.0.1:9")
    plan = _plan(service, tmp_path)
    assert plan.llm == LLMRef("claude-x", "http://127.0.0.1:9")  # the plan names the model
    assert service.ports(plan).api_key == "sk-injected-9"
    assert "sk-injected-9" not in repr(plan) and "sk-injected-9" not in repr(service)

    keyed = settings.model_copy(update={"anthropic_api_key": SecretStr("sk-settings")})
    none = FixRepairService(keyed, toolchains=(), use_index=False, parallel=1, llm_config=LLMConfig())
    assert not none.has_llm and none.defaults.llm is None  # the settings' key is not read behind its back


def test_the_worker_wiring_passes_the_llm_config_of_the_settings(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    import bot.worker_wiring as wiring

    keyed = settings.model_copy(update={"anthropic_api_key": SecretStr("sk-worker"), "model": "claude-w"})
    seen: list[object] = []

    def spy(s: object) -> LLMConfig:
        seen.append(s)
        return llm_config(s)  # type: ignore[arg-type]

    monkeypatch.setattr(wiring, "llm_config", spy)
    monkeypatch.setattr(wiring, "open_store", lambda _s: SimpleNamespace(engine=None))
    monkeypatch.setattr(wiring, "RepoIndexService", lambda *_a, **_k: object())
    deps = wiring.default_wiring(keyed, broker=object())()  # type: ignore[arg-type]
    repair = deps.repair
    assert isinstance(repair, FixRepairService) and seen == [keyed]
    assert repair.llm_config == LLMConfig("sk-worker", "claude-w", keyed.anthropic_base_url)
