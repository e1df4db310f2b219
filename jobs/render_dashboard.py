"""The repository dashboard issue's text (``.arcs.yml`` ``dashboard_issue: true``), pure.

One issue per repository, titled :data:`DASHBOARD_TITLE`, found again by the hidden
:func:`dashboard_marker` at the top of its body (which also records when it was rendered: the
refresh job skips a request an earlier render already covers, :func:`rendered_at`). Sections:
open attempts, open ARCS pull requests, paused items, known flaky tests, budget used this month.
Text that comes from repositories (branch names, test ids) is defused: no @mention pings, no
HTML comments that could forge the marker.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from jobs.render_text import defuse, one_line, truncate

__all__ = [
    "DASHBOARD_MARKER_RE",
    "DASHBOARD_TITLE",
    "MAX_ROWS",
    "BudgetLine",
    "DashboardData",
    "FlakyTest",
    "OpenAttempt",
    "OpenPr",
    "dashboard_marker",
    "render_dashboard",
    "rendered_at",
]

DASHBOARD_TITLE = "ARCS dashboard"
DASHBOARD_MARKER_RE = re.compile(r"<!-- arcs:dashboard-issue(?: rendered=(?P<at>[0-9T:+.\-Z]+))? -->")
"""The hidden marker that identifies the dashboard issue (whatever else its body says)."""
MAX_ROWS = 50
"""Rows per section; the rest are counted, not listed."""
MAX_BODY_CHARS = 65_000
"""Below GitHub's 65,536-character limit on an issue body."""


@dataclass(frozen=True, slots=True)
class OpenAttempt:
    """An attempt still queued or running (``waiting``: deferred to after the quiet hours)."""

    id: int
    status: str
    what: str
    """``CI on `main```, ``issue #3``, ``pull request #5``: already Markdown, branch names defused."""
    since: dt.datetime
    waiting: bool = False


@dataclass(frozen=True, slots=True)
class OpenPr:
    """An ARCS pull request not merged or closed yet."""

    number: int
    attempt_id: int
    branch: str


@dataclass(frozen=True, slots=True)
class FlakyTest:
    """A test its recorded history calls flaky (:func:`jobs.test_history.known_flaky_since`)."""

    test_id: str
    rate: float
    """Failures per run where it is flaky (:attr:`jobs.repair.flaky.FlakyVerdict.flake_rate`)."""
    runs: int
    failures: int
    last_seen: dt.datetime | None
    evidence: str
    """The classifier's sentence (``failed 3 of 12 runs at a1b2c3d, …``)."""


@dataclass(frozen=True, slots=True)
class BudgetLine:
    """USD committed this month against one monthly cap (``limit_usd`` None: no cap, just spend)."""

    scope: str
    """``acme`` (the owner, every repository) or ``acme/widgets``."""
    used_usd: float
    limit_usd: float | None = None


@dataclass(frozen=True, slots=True)
class DashboardData:
    """Everything the issue shows, read from the store (:mod:`jobs.dashboard_issue`)."""

    repo: str
    now: dt.datetime
    month: str
    """``2026-11``."""
    attempts: tuple[OpenAttempt, ...] = ()
    pulls: tuple[OpenPr, ...] = ()
    paused: tuple[str, ...] = ()
    """Sentences: who paused ARCS here, attempts waiting for the quiet hours."""
    flaky: tuple[FlakyTest, ...] = ()
    budget: tuple[BudgetLine, ...] = ()
    dashboard_url: str = ""
    """The web dashboard's page of the repository ('' when not served)."""


def dashboard_marker(at: dt.datetime) -> str:
    """The hidden marker, recording when the body was rendered (UTC, to the microsecond: the
    refresh job compares it with the time of the change it was sent for)."""
    stamp = at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    return f"<!-- arcs:dashboard-issue rendered={stamp} -->"


def rendered_at(body: str | None) -> dt.datetime | None:
    """When the dashboard body was rendered (None: not a dashboard body, or no time in it)."""
    found = DASHBOARD_MARKER_RE.search(body or "")
    if found is None or not found.group("at"):
        return None
    try:
        return dt.datetime.fromisoformat(found.group("at").replace("Z", "+00:00"))
    except ValueError:
        return None


def _when(at: dt.datetime) -> str:
    return f"{at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


def _more(total: int) -> list[str]:
    return ["", f"…and {total - MAX_ROWS} more."] if total > MAX_ROWS else []


def _attempts(rows: Sequence[OpenAttempt]) -> list[str]:
    if not rows:
        return ["No attempt is queued or running."]
    out = ["| Attempt | What | Status | Since |", "| --- | --- | --- | --- |"]
    for a in rows[:MAX_ROWS]:
        status = "waiting for the quiet hours to end" if a.waiting else a.status
        out.append(f"| #{a.id} | {a.what} | {status} | {_when(a.since)} |")
    return out + _more(len(rows))


def _pulls(rows: Sequence[OpenPr]) -> list[str]:
    if not rows:
        return ["No ARCS pull request is open."]
    out = [
        f"- #{p.number} (attempt #{p.attempt_id}, `{defuse(one_line(p.branch, 200))}`)"
        for p in rows[:MAX_ROWS]
    ]
    return out + _more(len(rows))


def _cell(text: str, limit: int) -> str:
    """Untrusted text in a table cell: one line, no mention or markup, no column break."""
    return defuse(one_line(text, limit)).replace("|", "\\|").replace("`", "'")


def _evidence(t: FlakyTest) -> str:
    # the Test column names it already: the sentence goes on from its verb
    lead = f"`{t.test_id}` "
    return t.evidence[len(lead) :] if t.evidence.startswith(lead) else t.evidence


def _flaky(rows: Sequence[FlakyTest]) -> list[str]:
    if not rows:
        return ["None known."]
    out = ["| Test | Flake rate | Runs seen | Last seen | Evidence |", "| --- | --- | --- | --- | --- |"]
    for t in rows[:MAX_ROWS]:
        seen = _when(t.last_seen) if t.last_seen is not None else "?"
        out.append(
            f"| `{_cell(t.test_id, 300)}` | {t.rate:.0%} | {t.runs} ({t.failures} failed) | {seen} "
            f"| {_cell(_evidence(t), 400)} |"
        )
    return out + _more(len(rows))


def _budget(rows: Sequence[BudgetLine], month: str) -> list[str]:
    out = []
    for b in rows:
        if b.limit_usd is None:
            out.append(f"- `{b.scope}`: {_money(b.used_usd)} spent or reserved in {month} (no monthly cap).")
        else:
            share = f" ({b.used_usd / b.limit_usd:.0%})" if b.limit_usd > 0 else ""
            out.append(f"- `{b.scope}`: {_money(b.used_usd)} of {_money(b.limit_usd)}{share} in {month}.")
    return out or [f"Nothing spent in {month}."]


def render_dashboard(data: DashboardData) -> tuple[str, str]:
    """``(title, body)`` of the dashboard issue for ``data``."""
    link = f" ([web dashboard]({data.dashboard_url}))" if data.dashboard_url else ""
    parts = [
        dashboard_marker(data.now),
        f"ARCS keeps this issue up to date after each attempt in `{data.repo}`{link}. "
        "It is edited in place, never duplicated; closing it does not stop the updates: "
        "set `dashboard_issue: false` in `.arcs.yml` for that.",
        f"_Updated {_when(data.now)}._",
        "## Open attempts",
        "\n".join(_attempts(data.attempts)),
        "## Open pull requests",
        "\n".join(_pulls(data.pulls)),
        "## Paused",
        "\n".join(f"- {line}" for line in data.paused) if data.paused else "Nothing is paused.",
        "## Known flaky tests",
        "\n".join(_flaky(data.flaky)),
        "## Budget this month",
        "\n".join(_budget(data.budget, data.month)),
    ]
    return DASHBOARD_TITLE, truncate("\n\n".join(parts), MAX_BODY_CHARS)
