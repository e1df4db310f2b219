"""The failing tests' call path as tier 0's edit-site scores (issue #29).

Made from the run's one traced run (:func:`jobs.repair.spectrum.call_path`) and handed to the
proposer in :class:`jobs.repair.ports.ProposalRequest`; pure data, no imports of the core.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CallPath:
    """Which lines the failing tests ran, with their Ochiai scores."""

    lines: Mapping[str, Mapping[int, float]]
    """path -> line -> Ochiai, for the lines a failing test ran in the recorded suspects."""
    spans: tuple[tuple[str, int, int], ...]
    """The recorded suspect functions' (path, first, last) line spans: their lines not in
    :attr:`lines` did not run on a failing path."""
    complete: bool
    """Every line a failing test ran is in :attr:`lines` (a complete run whose suspects were all
    recorded): a line outside it did not run on a failing path either."""

    def covers(self, path: str, line: int) -> bool:
        """True when the trace knows whether ``line`` ran on a failing path."""
        return self.complete or any(p == path and a <= line <= b for p, a, b in self.spans)

    def header_score(self, path: str, line: int) -> float | None:
        """The best score of the traced function whose header (``def`` line up to its first line
        a failing test ran) holds ``line``; None when ``line`` is in no such header."""
        ran = self.lines.get(path, {})
        for p, first, last in self.spans:
            if p != path or not first <= line <= last:
                continue
            body = [n for n in ran if first <= n <= last]
            if body and line < min(body):
                return max(ran[n] for n in body)
        return None


__all__ = ["CallPath"]
