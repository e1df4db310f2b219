"""Prototypes of proposed dashboard query changes, timed by the benchmark next to the real ones.

Adopted: ``bot.dashboard.queries.org_overview`` is now the one-pass version (and migration 0003
adds the covering indexes), so :func:`org_overview_onepass` delegates to it. It returned the same
:class:`~bot.dashboard.queries.OrgOverview` as :func:`bot.dashboard.queries.org_overview`
(:func:`same_overview` checks it on the benchmark's data before anything is timed), with 5 SQL
statements instead of 11: the attempts of the window are grouped once by (week, repository,
status), the pull requests once by (week, repository, state), and the time-to-PR samples are
fetched once, instead of once for the totals, once for the weeks and once for the repositories.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection
from typing import Any

from bot.dashboard import queries as q
from bot.dashboard.queries_aggregates import org_overview as _adopted
from bot.store.store import Store


def org_overview_onepass(
    store: Store, owner: str, repos: Collection[str], *, now: dt.datetime, weeks: int = 12
) -> q.OrgOverview:
    """The prototype, now adopted as :func:`bot.dashboard.queries.org_overview` (these rows time
    the same code since; the RESULTS.md run before the adoption compares it with the old one)."""
    # The function itself, not the module attribute: the page timing swaps that attribute for
    # this one, which then called itself without end.
    return _adopted(store, owner, repos, now=now, weeks=weeks)


def same_overview(a: q.OrgOverview, b: q.OrgOverview) -> bool:
    """Whether two overviews show the same numbers (USD compared to 1e-6: sums in another order)."""
    return _close(a.to_json(), b.to_json())


def _close(x: Any, y: Any) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_close(x[k], y[k]) for k in x)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_close(i, j) for i, j in zip(x, y, strict=True))
    return bool(x == y)
