"""Settings values -> the plain values the application layer runs on.

Today: the model configuration (:func:`llm_config`) and the default parallelism
(:func:`default_jobs`, the engine's :func:`jobs.engine.default_parallel`), shared by ``arcs fix``,
the benches and the GitHub Action. The settings arrive structurally (:class:`LLMSettings`: ``bot.settings.Settings``
conforms), so this module does not import ``bot``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pydantic import SecretStr

    from jobs.fix import LLMConfig

__all__ = ["LLMSettings", "default_jobs", "llm_config"]


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
    """The model configuration from the injected settings (a :class:`jobs.fix.LLMConfig`)."""
    # On call: jobs.fix pulls in the runners and the index; `arcs` commands import this module.
    from jobs.fix import LLMConfig

    key = settings.anthropic_api_key
    return LLMConfig(
        api_key=key.get_secret_value() if key is not None else None,
        model=settings.model,
        base_url=settings.anthropic_base_url,
    )


def default_jobs() -> int:
    """Candidates tested concurrently by default: :func:`jobs.engine.default_parallel` (4, or
    fewer on a machine with fewer CPUs)."""
    # On call, like llm_config: the engine pulls in the runners and the index.
    from jobs.engine import default_parallel

    return default_parallel()
