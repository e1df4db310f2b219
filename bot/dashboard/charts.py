"""Server-side SVG charts for the dashboard: pure functions from numbers to an SVG string.

No JavaScript: each chart is an inline ``<svg role="img" aria-label=…>`` with a ``<title>``, axis
labels, a legend, and a ``<title>`` tooltip on every point, bar and segment. All text is
XML-escaped here; the output is deterministic (fixed number formatting), so tests can parse it.
An empty series gives the same frame with "no data yet".

Structure that tests (and CSS) rely on: series are ``<g class="series" data-series=NAME>``;
points are ``<circle class="point" data-value=V>``; bars are ``<rect class="bar" data-value=V>``;
stacked segments are ``<rect class="segment" data-series=STATUS data-value=N>``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from bot.dashboard.queries import STATUS_ORDER, ClassOutcomes, WeekStats

WIDTH = 640
HEIGHT = 260
# Plot area margins: left for y tick labels, bottom for x labels and the legend.
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 28, 64
NO_DATA = "no data yet"

SERIES_COLORS: tuple[str, ...] = ("#2563eb", "#d97706", "#059669", "#7c3aed", "#dc2626", "#0891b2")
STATUS_COLORS: dict[str, str] = {
    "fixed": "#059669",
    "partial": "#ca8a04",
    "no_fix": "#d97706",
    "reverted": "#b45309",
    "environment": "#7c3aed",
    "refused": "#6b7280",
    "error": "#dc2626",
    "skipped": "#a3a3a3",
    "running": "#2563eb",
    "queued": "#93c5fd",
}
STATUS_LABELS: dict[str, str] = {
    "fixed": "fixed",
    "partial": "partial",
    "no_fix": "no fix",
    "reverted": "no fix, reverted",
    "environment": "environment",
    "refused": "refused",
    "error": "error",
    "skipped": "skipped",
    "running": "running",
    "queued": "queued",
}

Formatter = Callable[[float], str]


def percent(value: float) -> str:
    """0.5 -> ``50%``."""
    return f"{value * 100:.0f}%"


def usd(value: float) -> str:
    """1.5 -> ``$1.50`` (small amounts keep 4 decimals)."""
    return f"${value:.4f}" if 0 < abs(value) < 0.01 else f"${value:.2f}"


def _n(x: float) -> str:
    """A coordinate: one decimal, no ``-0.0``."""
    text = f"{x:.1f}"
    return "0.0" if text == "-0.0" else text


def _a(text: object) -> str:
    return escape(str(text), quote=True)


@dataclass(frozen=True, slots=True)
class Series:
    """One named line or bar series; ``None`` is a gap (no point, no bar)."""

    name: str
    values: tuple[float | None, ...]
    color: str = ""


def nice_max(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k that is >= ``value`` (1 for nothing)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        candidate = step * 10.0**exp
        if candidate >= value * (1 - 1e-12):
            return candidate
    return 10.0 ** (exp + 1)  # pragma: no cover - the loop always returns


class _Frame:
    """Plot geometry shared by the charts."""

    def __init__(self, width: int, height: int, n: int, y_max: float) -> None:
        self.width, self.height = width, height
        self.x0, self.x1 = LEFT, width - RIGHT
        self.y0, self.y1 = height - BOTTOM, TOP  # y0: the baseline (bottom of the plot)
        self.n = max(1, n)
        self.y_max = y_max if y_max > 0 else 1.0

    @property
    def plot_h(self) -> float:
        return self.y0 - self.y1

    def slot(self) -> float:
        return (self.x1 - self.x0) / self.n

    def cx(self, i: int) -> float:
        """Centre of slot ``i``."""
        return self.x0 + self.slot() * (i + 0.5)

    def y(self, value: float) -> float:
        clamped = min(max(value, 0.0), self.y_max)
        return self.y0 - clamped / self.y_max * self.plot_h

    def h(self, value: float) -> float:
        return self.y0 - self.y(value)


def _open(width: int, height: int, title: str, label: str, kind: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{_a(kind)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{_a(label)}" font-family="system-ui, -apple-system, sans-serif">',
        f"<title>{_a(title)}</title>",
        f'<text class="chart-title" x="{LEFT}" y="16" font-size="13" font-weight="600">{_a(title)}</text>',
    ]


def _empty(width: int, height: int, title: str, kind: str) -> str:
    parts = _open(width, height, title, f"{title}: {NO_DATA}", kind)
    parts.append(
        f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{width - LEFT - RIGHT}" '
        f'height="{height - TOP - BOTTOM}" fill="none" stroke="#d4d4d4"/>'
    )
    parts.append(
        f'<text class="empty" x="{_n(width / 2)}" y="{_n((TOP + height - BOTTOM) / 2)}" '
        f'text-anchor="middle" font-size="14" fill="#6b7280">{NO_DATA}</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts)


def _y_axis(f: _Frame, fmt: Formatter, y_label: str, ticks: int = 4) -> list[str]:
    out = ['<g class="axis axis-y" font-size="11" fill="#525252">']
    for i in range(ticks + 1):
        value = f.y_max * i / ticks
        y = f.y(value)
        out.append(
            f'<line class="grid" x1="{f.x0}" x2="{f.x1}" y1="{_n(y)}" y2="{_n(y)}" '
            f'stroke="{"#a3a3a3" if i == 0 else "#e5e5e5"}" stroke-width="1"/>'
        )
        out.append(f'<text x="{f.x0 - 6}" y="{_n(y + 4)}" text-anchor="end">{_a(fmt(value))}</text>')
    mid = (f.y0 + f.y1) / 2
    out.append(
        f'<text class="axis-label" x="12" y="{_n(mid)}" text-anchor="middle" '
        f'transform="rotate(-90 12 {_n(mid)})">{_a(y_label)}</text>'
    )
    out.append("</g>")
    return out


def _x_axis(f: _Frame, labels: Sequence[str], x_label: str) -> list[str]:
    # Thin the labels so they never overlap (about 48 px each).
    every = max(1, math.ceil(len(labels) * 48 / max(1, f.x1 - f.x0)))
    out = ['<g class="axis axis-x" font-size="11" fill="#525252">']
    for i, label in enumerate(labels):
        if i % every and i != len(labels) - 1:
            continue
        out.append(f'<text x="{_n(f.cx(i))}" y="{f.y0 + 16}" text-anchor="middle">{_a(label)}</text>')
    out.append(
        f'<text class="axis-label" x="{_n((f.x0 + f.x1) / 2)}" y="{f.y0 + 34}" '
        f'text-anchor="middle">{_a(x_label)}</text>'
    )
    out.append("</g>")
    return out


def _legend(f: _Frame, items: Sequence[tuple[str, str]]) -> list[str]:
    out = ['<g class="legend" font-size="11" fill="#262626">']
    x = float(f.x0)
    y = f.height - 12
    for name, color in items:
        out.append(
            f'<rect class="swatch" x="{_n(x)}" y="{y - 9}" width="10" height="10" fill="{_a(color)}"/>'
            f'<text x="{_n(x + 14)}" y="{y}">{_a(name)}</text>'
        )
        x += 24 + 7 * len(name)
    out.append("</g>")
    return out


def line_chart(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    title: str,
    y_label: str = "",
    x_label: str = "",
    y_max: float | None = None,
    fmt: Formatter = percent,
    tooltips: Sequence[str] | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """Lines over ``labels`` (one point per non-``None`` value, gaps break the line).

    ``y_max`` fixes the scale (e.g. 1.0 for rates), else it is a nice ceiling of the data.
    ``tooltips`` (one per label) prefixes each point's tooltip (e.g. the full week name).
    """
    values = [v for s in series for v in s.values if v is not None]
    if not labels or not values:
        return _empty(width, height, title, "line")
    top = y_max if y_max is not None else nice_max(max(values))
    f = _Frame(width, height, len(labels), top)
    legend = [(s.name, s.color or SERIES_COLORS[i % len(SERIES_COLORS)]) for i, s in enumerate(series)]
    summary = "; ".join(
        f"{s.name}: " + ", ".join(f"{labels[i]} {fmt(v)}" for i, v in enumerate(s.values) if v is not None)
        for s in series
    )
    parts = _open(width, height, title, f"{title}. {summary}", "line")
    parts += _y_axis(f, fmt, y_label)
    parts += _x_axis(f, labels, x_label)
    for s, (_, color) in zip(series, legend, strict=True):
        parts.append(f'<g class="series" data-series="{_a(s.name)}">')
        segment: list[str] = []
        segments: list[list[str]] = []
        for i, v in enumerate(s.values[: len(labels)]):
            if v is None:
                if segment:
                    segments.append(segment)
                segment = []
                continue
            segment.append(f"{_n(f.cx(i))},{_n(f.y(v))}")
        if segment:
            segments.append(segment)
        for seg in segments:
            if len(seg) > 1:
                parts.append(
                    f'<polyline class="line" points="{" ".join(seg)}" fill="none" '
                    f'stroke="{_a(color)}" stroke-width="2"/>'
                )
        for i, v in enumerate(s.values[: len(labels)]):
            if v is None:
                continue
            tip = f"{tooltips[i] if tooltips else labels[i]}: {s.name} {fmt(v)}"
            parts.append(
                f'<circle class="point" cx="{_n(f.cx(i))}" cy="{_n(f.y(v))}" r="3.5" '
                f'fill="{_a(color)}" data-value="{v:.6g}"><title>{_a(tip)}</title></circle>'
            )
        parts.append("</g>")
    parts += _legend(f, legend)
    parts.append("</svg>")
    return "\n".join(parts)


def bar_chart(
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    title: str,
    name: str,
    y_label: str = "",
    x_label: str = "",
    fmt: Formatter = usd,
    color: str = SERIES_COLORS[0],
    tooltips: Sequence[str] | None = None,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """One bar per label (``None``: no bar); heights are proportional to the values."""
    present = [v for v in values if v is not None]
    if not labels or not present:
        return _empty(width, height, title, "bar")
    f = _Frame(width, height, len(labels), nice_max(max(present)))
    summary = ", ".join(f"{labels[i]} {fmt(v)}" for i, v in enumerate(values) if v is not None)
    parts = _open(width, height, title, f"{title}. {name}: {summary}", "bar")
    parts += _y_axis(f, fmt, y_label)
    parts += _x_axis(f, labels, x_label)
    bar_w = f.slot() * 0.6
    parts.append(f'<g class="series" data-series="{_a(name)}">')
    for i, v in enumerate(values[: len(labels)]):
        if v is None:
            continue
        h = f.h(v)
        tip = f"{tooltips[i] if tooltips else labels[i]}: {name} {fmt(v)}"
        parts.append(
            f'<rect class="bar" x="{_n(f.cx(i) - bar_w / 2)}" y="{_n(f.y0 - h)}" width="{_n(bar_w)}" '
            f'height="{_n(h)}" fill="{_a(color)}" data-value="{v:.6g}"><title>{_a(tip)}</title></rect>'
        )
    parts.append("</g>")
    parts += _legend(f, [(name, color)])
    parts.append("</svg>")
    return "\n".join(parts)


def stacked_bar_chart(
    labels: Sequence[str],
    stacks: Sequence[Series],
    *,
    title: str,
    y_label: str = "",
    x_label: str = "",
    width: int = WIDTH,
    height: int = HEIGHT,
) -> str:
    """One bar per label made of one segment per series (counts), bottom to top in series order."""
    totals = [sum(s.values[i] or 0.0 for s in stacks) for i in range(len(labels))]
    if not labels or not any(totals):
        return _empty(width, height, title, "stacked")
    top = float(math.ceil(nice_max(max(totals))))
    f = _Frame(width, height, len(labels), top)
    # Counts: ticks on whole numbers.
    ticks = next(t for t in (4, 5, 3, 2, 1) if (top / t).is_integer())

    def count(v: float) -> str:
        return f"{v:.0f}" if float(v).is_integer() else f"{v:.1f}"

    summary = "; ".join(
        f"{label}: "
        + ", ".join(f"{s.name} {count(s.values[i] or 0)}" for s in stacks if (s.values[i] or 0) > 0)
        for i, label in enumerate(labels)
    )
    parts = _open(width, height, title, f"{title}. {summary}", "stacked")
    parts += _y_axis(f, count, y_label, ticks)
    parts += _x_axis(f, labels, x_label)
    bar_w = f.slot() * 0.6
    colors = [s.color or SERIES_COLORS[i % len(SERIES_COLORS)] for i, s in enumerate(stacks)]
    for i, label in enumerate(labels):
        parts.append(f'<g class="stack" data-label="{_a(label)}" data-total="{totals[i]:.6g}">')
        base = 0.0
        for s, color in zip(stacks, colors, strict=True):
            v = s.values[i] if i < len(s.values) else None
            if not v:
                continue
            y_top, y_bottom = f.y(base + v), f.y(base)
            parts.append(
                f'<rect class="segment" data-series="{_a(s.name)}" x="{_n(f.cx(i) - bar_w / 2)}" '
                f'y="{_n(y_top)}" width="{_n(bar_w)}" height="{_n(y_bottom - y_top)}" fill="{_a(color)}" '
                f'data-value="{v:.6g}"><title>{_a(f"{label}: {s.name} {count(v)}")}</title></rect>'
            )
            base += v
        parts.append("</g>")
    parts += _legend(f, [(s.name, c) for s, c in zip(stacks, colors, strict=True)])
    parts.append("</svg>")
    return "\n".join(parts)


# --- the dashboard's three charts ----------------------------------------------------------------


def _week_labels(weeks: Sequence[WeekStats]) -> tuple[list[str], list[str]]:
    short = [w.label.split("-", 1)[1] for w in weeks]
    full = [f"{w.label} (from {w.start.isoformat()})" for w in weeks]
    return short, full


def rates_chart(weeks: Sequence[WeekStats], *, width: int = WIDTH, height: int = HEIGHT) -> str:
    """Repair rate and accepted-fix rate by ISO week, 0-100%."""
    short, full = _week_labels(weeks)
    return line_chart(
        short,
        [
            Series("repair rate", tuple(w.stats.repair_rate for w in weeks), SERIES_COLORS[0]),
            Series("accepted-fix rate", tuple(w.stats.accepted_fix_rate for w in weeks), SERIES_COLORS[1]),
        ],
        title="Repair rate and accepted-fix rate by week",
        y_label="rate",
        x_label="ISO week",
        y_max=1.0,
        fmt=percent,
        tooltips=full,
        width=width,
        height=height,
    )


def outcomes_chart(classes: Sequence[ClassOutcomes], *, width: int = WIDTH, height: int = HEIGHT) -> str:
    """Attempt outcomes stacked by status, one bar per failure class."""
    present = {s for c in classes for s, _ in c.counts}
    statuses = [s for s in STATUS_ORDER if s in present] + sorted(present - set(STATUS_ORDER))
    stacks = [
        Series(
            STATUS_LABELS.get(s, s),
            tuple(float(c.count(s)) for c in classes),
            STATUS_COLORS.get(s, SERIES_COLORS[i % len(SERIES_COLORS)]),
        )
        for i, s in enumerate(statuses)
    ]
    return stacked_bar_chart(
        [c.failure_class for c in classes],
        stacks,
        title="Outcomes by failure class",
        y_label="attempts",
        x_label="failure class",
        width=width,
        height=height,
    )


def cost_chart(weeks: Sequence[WeekStats], *, width: int = WIDTH, height: int = HEIGHT) -> str:
    """USD per fix by ISO week (weeks without a fix have no bar)."""
    short, full = _week_labels(weeks)
    return bar_chart(
        short,
        [w.stats.usd_per_fix for w in weeks],
        title="USD per fix by week",
        name="USD per fix",
        y_label="USD",
        x_label="ISO week",
        fmt=usd,
        color=SERIES_COLORS[2],
        tooltips=full,
        width=width,
        height=height,
    )


__all__ = [
    "NO_DATA",
    "STATUS_COLORS",
    "Series",
    "bar_chart",
    "cost_chart",
    "line_chart",
    "nice_max",
    "outcomes_chart",
    "percent",
    "rates_chart",
    "stacked_bar_chart",
    "usd",
]
