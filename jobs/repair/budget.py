"""Budgets as values: what a repair may spend, and what it has spent."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True, slots=True)
class Budget:
    """Upper bounds for one repair attempt. Every dimension is enforced by the loop."""

    iterations: int = 5
    tokens: int = 400_000
    usd: float = 2.0
    wall_s: float = 1800.0
    executions: int = 60
    """Sandboxed test executions (reproduction, candidates, regression runs, triage)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 0:
                raise ValueError(f"budget {f.name} must be >= 0")

    def would_exceed(self, spend: Spend, extra: Spend) -> str | None:
        """The first dimension that ``spend + extra`` would push past its bound."""
        total = spend + extra
        for f in fields(self):
            if getattr(total, f.name) > getattr(self, f.name):
                return f.name
        return None

    def remaining(self, spend: Spend) -> Budget:
        """What is left (never negative)."""
        return Budget(
            iterations=max(0, self.iterations - spend.iterations),
            tokens=max(0, self.tokens - spend.tokens),
            usd=max(0.0, self.usd - spend.usd),
            wall_s=max(0.0, self.wall_s - spend.wall_s),
            executions=max(0, self.executions - spend.executions),
        )

    def with_(self, **changes: float) -> Budget:
        """A copy with some dimensions changed."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, float]:
        """Plain mapping, for traces and JSON."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class Spend:
    """What has been consumed so far; same dimensions as :class:`Budget`."""

    iterations: int = 0
    tokens: int = 0
    usd: float = 0.0
    wall_s: float = 0.0
    executions: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            iterations=self.iterations + other.iterations,
            tokens=self.tokens + other.tokens,
            usd=round(self.usd + other.usd, 10),
            wall_s=self.wall_s + other.wall_s,
            executions=self.executions + other.executions,
        )

    def as_dict(self) -> dict[str, float]:
        """Plain mapping, for traces and JSON."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
