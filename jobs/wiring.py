"""Settings values -> the plain values the application layer runs on.

The model configuration (:class:`LLMConfig`, built by :func:`llm_config`: the one place that reads
the model's key from the settings) and the default parallelism (:func:`default_parallel`), shared
by ``arcs fix``, the worker's repair service (:class:`jobs.repair_service.FixRepairService`), the benches
and the GitHub Action. The settings arrive structurally (:class:`LLMSettings`:
``bot.settings.Settings`` conforms), so this module does not import ``bot``; it imports nothing
heavy either (``arcs`` commands import it at start-up).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pydantic import SecretStr

    from jobs.plan import LLMRef

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PARALLEL",
    "LLMConfig",
    "LLMSettings",
    "default_jobs",
    "default_parallel",
    "llm_config",
]

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_PARALLEL = 4


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """How to reach the model (read from the settings at the edge by :func:`llm_config`)."""

    api_key: str | None = field(default=None, repr=False)
    model: str = DEFAULT_MODEL
    base_url: str | None = None

    @property
    def configured(self) -> bool:
        """An API key is set."""
        return bool(self.api_key)

    @property
    def ref(self) -> LLMRef | None:
        """What a plan records of it (never the key); None when no key is set."""
        from jobs.plan import LLMRef  # on use: the plan pulls in `.arcs.yml` parsing

        return LLMRef(self.model, self.base_url) if self.configured else None


class LLMSettings(Protocol):
    """The settings fields :func:`llm_config` reads (``ANTHROPIC_API_KEY``, ``ARCS_MODEL``, ``ANTHROPIC_BASE_URL``)."""

    @property
    def anthropic_api_key(self) -> SecretStr | None:
        """The API key; ``None`` when unset (no LLM tiers)."""

    @property
    def model(self) -> str:
        """The model name."""

    @property
    def anthropic_base_url(self) -> str | None:
        """Another endpoint than Anthropic's (a proxy, a test double)."""


def llm_config(settings: LLMSettings) -> LLMConfig:
    """The model configuration from the injected settings."""
    key = settings.anthropic_api_key
    return LLMConfig(
        api_key=key.get_secret_value() if key is not None else None,
        model=settings.model,
        base_url=settings.anthropic_base_url,
    )


def default_parallel() -> int:
    """Candidates tested concurrently by default: 4, or fewer on a machine with fewer CPUs."""
    return max(1, min(DEFAULT_PARALLEL, os.cpu_count() or 1))


def default_jobs() -> int:
    """``arcs fix --jobs``' default: :func:`default_parallel` (the worker's default too)."""
    return default_parallel()
