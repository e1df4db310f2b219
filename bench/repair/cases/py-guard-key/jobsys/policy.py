"""Retry policies read from job configuration dicts."""

from dataclasses import dataclass

DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_S = 2.0


@dataclass(frozen=True)
class Policy:
    retries: int
    backoff_s: float


def load_policy(raw: dict[str, object]) -> Policy:
    retries = int(raw["retries"])
    backoff = float(raw.get("backoff_s", DEFAULT_BACKOFF_S))
    if retries < 0:
        raise ValueError("retries must be >= 0")
    return Policy(retries, backoff)
