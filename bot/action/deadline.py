"""``timeout-minutes``: a wall-clock bound on the whole ``arcs action`` step.

A composite action cannot give its own steps a ``timeout-minutes`` from an input, so the bound is
kept inside ``arcs action``, in three layers:

1. the repair's wall-time budget is capped at what is left of the bound minus a reserve
   (:meth:`StepDeadline.repair_wall_s`), so the loop stops itself and still verifies;
2. the engine's interrupt port (:class:`DeadlineInterrupt`) answers "stopped after N minutes"
   once only the reserve is left, checked before reproduction and before every round;
3. a hard stop (:func:`run_bounded`): the step's work runs in a worker thread; when the bound is
   reached the caller stops waiting, writes the summary and exits with a clear line. The worker is
   told (:attr:`StepDeadline.abandoned`) so that it publishes nothing afterwards.

Time is read through an injected monotonic clock (tests use a fake one).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

RESERVE_SHARE = 0.2
"""The share of the bound kept for the final verification, publishing and the summary..."""
RESERVE_MAX_S = 120.0
"""...but never more than this many seconds."""


def minutes_text(minutes: float) -> str:
    """``1 minute``, ``2.5 minutes``."""
    shown = f"{minutes:g}"
    return f"{shown} minute" if shown == "1" else f"{shown} minutes"


@dataclass
class StepDeadline:
    """The bound of one step: ``minutes`` from ``start`` on ``monotonic``."""

    minutes: float
    monotonic: Callable[[], float]
    start: float = 0.0
    abandoned: threading.Event = field(default_factory=threading.Event)
    """Set when the hard stop fired: the worker must not publish any more."""

    @classmethod
    def begin(cls, minutes: float, monotonic: Callable[[], float]) -> StepDeadline:
        """A deadline that starts now."""
        return cls(minutes=minutes, monotonic=monotonic, start=monotonic())

    @property
    def seconds(self) -> float:
        """The whole bound in seconds."""
        return self.minutes * 60.0

    @property
    def reserve_s(self) -> float:
        """Seconds kept back from the repair for what follows it."""
        return min(RESERVE_MAX_S, self.seconds * RESERVE_SHARE)

    def left(self) -> float:
        """Seconds until the bound (never negative)."""
        return max(0.0, self.start + self.seconds - self.monotonic())

    def repair_wall_s(self) -> float:
        """The repair's wall-time budget from now: what is left minus the reserve (at least 1 s)."""
        return max(1.0, self.left() - self.reserve_s)

    @property
    def stop_line(self) -> str:
        """``stopped after N minutes (timeout-minutes)``."""
        return f"stopped after {minutes_text(self.minutes)} (timeout-minutes: {self.minutes:g})"


class DeadlineInterrupt:
    """The engine's :class:`jobs.repair.ports.Interrupt`: a reason to stop once only the reserve
    of the step's bound is left (or the hard stop already fired)."""

    def __init__(self, deadline: StepDeadline) -> None:
        self.deadline = deadline

    def check(self) -> str | None:
        """:attr:`StepDeadline.stop_line` when the repair must stop now, else None."""
        if self.deadline.abandoned.is_set() or self.deadline.left() <= self.deadline.reserve_s:
            return self.deadline.stop_line
        return None


@dataclass
class _Box(Generic[T]):
    value: T | None = None
    error: BaseException | None = None
    done: bool = False


def run_bounded(work: Callable[[], T], deadline: StepDeadline) -> tuple[bool, T | None]:
    """``(True, work())`` when ``work`` ends within the bound (its exception is re-raised here);
    ``(False, None)`` when the bound is reached first: the worker thread is left to stop at its
    next interrupt check (it is a daemon: the process does not wait for it) and
    :attr:`StepDeadline.abandoned` is set."""
    box: _Box[T] = _Box()

    def target() -> None:
        try:
            box.value = work()
        except BaseException as exc:  # handed to the caller, or dropped once abandoned
            box.error = exc
        finally:
            box.done = True

    worker = threading.Thread(target=target, name="arcs-action", daemon=True)
    worker.start()
    worker.join(deadline.left())
    if not box.done:
        deadline.abandoned.set()
        return False, None
    if box.error is not None:
        raise box.error
    return True, box.value


__all__ = [
    "RESERVE_MAX_S",
    "RESERVE_SHARE",
    "DeadlineInterrupt",
    "StepDeadline",
    "minutes_text",
    "run_bounded",
]
