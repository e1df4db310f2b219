"""The SVG charts: valid XML, accessible, escaped, deterministic, and faithful to the data."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

import pytest

from bot.dashboard import charts
from bot.dashboard.charts import BOTTOM, HEIGHT, TOP, Series
from bot.dashboard.queries import ClassOutcomes, Stats, WeekStats

SVG = "{http://www.w3.org/2000/svg}"
BASELINE = HEIGHT - BOTTOM
PLOT_H = HEIGHT - BOTTOM - TOP


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img" and root.get("aria-label")
    assert root.find(f"{SVG}title") is not None
    return root


def points(root: ET.Element, series: str) -> list[ET.Element]:
    group = next(g for g in root.iter(f"{SVG}g") if g.get("data-series") == series)
    return list(group.iter(f"{SVG}circle"))


def week(start: dt.date, **counts: int | float) -> WeekStats:
    return WeekStats(start, Stats(**counts))  # type: ignore[arg-type]


MONDAYS = [dt.date(2025, 1, 6) + dt.timedelta(weeks=i) for i in range(5)]
WEEKS = [
    week(MONDAYS[0]),  # nothing: no point, no bar
    week(MONDAYS[1], attempts=4, fixed=1, no_fix=3, total_usd=2.0, prs_opened=1, prs_merged=1),
    week(MONDAYS[2], attempts=2, fixed=2, total_usd=1.0, prs_opened=2, prs_merged=1, prs_closed=1),
    week(MONDAYS[3], attempts=1, errors=1, total_usd=0.5),
    week(MONDAYS[4], attempts=4, fixed=4, total_usd=8.0, prs_opened=2, prs_closed=2),
]


def test_rates_chart_has_one_point_per_defined_rate_at_the_right_height() -> None:
    root = parse(charts.rates_chart(WEEKS))
    repair = points(root, "repair rate")
    accepted = points(root, "accepted-fix rate")
    want_repair = [w.stats.repair_rate for w in WEEKS if w.stats.repair_rate is not None]
    want_accepted = [w.stats.accepted_fix_rate for w in WEEKS if w.stats.accepted_fix_rate is not None]
    assert [float(p.get("data-value", "")) for p in repair] == pytest.approx(want_repair)
    assert len(accepted) == len(want_accepted) == 3
    for p, value in zip(repair + accepted, want_repair + want_accepted, strict=True):
        # y is 0..100% over the plot height, measured up from the baseline
        assert (BASELINE - float(p.get("cy", ""))) / PLOT_H == pytest.approx(value, abs=0.01)
        title = p.find(f"{SVG}title")
        assert title is not None and "%" in (title.text or "")
    # the gap (week 4 has no decided PR) splits the accepted-fix line: no polyline crosses it
    lines = next(g for g in root.iter(f"{SVG}g") if g.get("data-series") == "accepted-fix rate")
    assert len(list(lines.iter(f"{SVG}polyline"))) == 1
    label = root.get("aria-label", "")
    assert "repair rate" in label and "W03 25%" in label
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "100%" in texts and "0%" in texts and "ISO week" in texts  # axis ticks and label
    assert "repair rate" in texts and "accepted-fix rate" in texts  # legend


def test_cost_chart_bars_are_proportional_to_usd_per_fix() -> None:
    root = parse(charts.cost_chart(WEEKS))
    bars = list(root.iter(f"{SVG}rect"))
    bars = [b for b in bars if b.get("class") == "bar"]
    want = [w.stats.usd_per_fix for w in WEEKS if w.stats.usd_per_fix is not None]
    assert len(bars) == len(want) == 3  # weeks without a fix have no bar
    heights = [float(b.get("height", "")) for b in bars]
    for h, v in zip(heights, want, strict=True):
        assert h / heights[0] == pytest.approx(v / want[0], rel=0.01)
        assert 0 < h <= PLOT_H
    for b in bars:  # bars stand on the baseline
        assert float(b.get("y", "")) + float(b.get("height", "")) == pytest.approx(BASELINE, abs=0.1)
    assert "$2.00" in (bars[0].find(f"{SVG}title").text or "")  # type: ignore[union-attr]


def test_outcomes_chart_stacks_statuses_per_class() -> None:
    classes = [
        ClassOutcomes("test", (("fixed", 4), ("no_fix", 2), ("error", 1))),
        ClassOutcomes("build", (("fixed", 1), ("refused", 1))),
        ClassOutcomes("issue", (("no_fix", 3),)),
    ]
    root = parse(charts.outcomes_chart(classes))
    stacks = [g for g in root.iter(f"{SVG}g") if g.get("class") == "stack"]
    assert [s.get("data-label") for s in stacks] == ["test", "build", "issue"]
    unit = None
    for stack, cls in zip(stacks, classes, strict=True):
        segments = list(stack.iter(f"{SVG}rect"))
        assert [(s.get("data-series"), float(s.get("data-value", ""))) for s in segments] == [
            (charts.STATUS_LABELS[st], n) for st, n in cls.counts
        ]
        total_h = sum(float(s.get("height", "")) for s in segments)
        unit = unit or total_h / cls.total
        assert total_h == pytest.approx(unit * cls.total, abs=0.3)
    legend = [
        t.text for g in root.iter(f"{SVG}g") if g.get("class") == "legend" for t in g.iter(f"{SVG}text")
    ]
    assert legend == ["fixed", "no fix", "refused", "error"]
    ticks = [t.text for g in root.iter(f"{SVG}g") if "axis-y" in (g.get("class") or "") for t in g]
    assert all(t is None or "." not in t for t in ticks)  # counts have whole-number ticks


@pytest.mark.parametrize(
    "svg",
    [
        charts.rates_chart([]),
        charts.rates_chart([week(MONDAYS[0]), week(MONDAYS[1], attempts=2, refused=2)]),
        charts.cost_chart([week(MONDAYS[0])]),
        charts.outcomes_chart([]),
    ],
)
def test_empty_charts_say_no_data_yet(svg: str) -> None:
    root = parse(svg)
    assert charts.NO_DATA in root.get("aria-label", "")
    assert any(t.text == charts.NO_DATA for t in root.iter(f"{SVG}text"))
    assert not list(root.iter(f"{SVG}circle"))
    assert not [r for r in root.iter(f"{SVG}rect") if r.get("class") in ("bar", "segment")]


def test_text_is_escaped() -> None:
    hostile = "<script>alert('x')</script> & \"q\""
    svgs = [
        charts.line_chart([hostile, "b"], [Series(hostile, (0.5, 0.25))], title=hostile, y_label=hostile),
        charts.bar_chart([hostile], [1.0], title=hostile, name=hostile),
        charts.stacked_bar_chart([hostile], [Series(hostile, (2.0,))], title=hostile),
        charts.outcomes_chart([ClassOutcomes(hostile, (("fixed", 1),))]),
    ]
    for svg in svgs:
        root = parse(svg)  # well-formed XML despite the markup in the data
        assert "<script" not in svg
        assert not list(root.iter("script")) and not list(root.iter(f"{SVG}script"))
        assert any(hostile in (t.text or "") for t in root.iter())


def test_output_is_deterministic() -> None:
    assert charts.rates_chart(WEEKS) == charts.rates_chart(list(WEEKS))
    assert charts.cost_chart(WEEKS) == charts.cost_chart(list(WEEKS))


def test_values_above_the_scale_are_clamped_and_scales_are_nice() -> None:
    root = parse(charts.line_chart(["a"], [Series("s", (1.7,))], title="t", y_max=1.0))
    (p,) = points(root, "s")
    assert float(p.get("cy", "")) == pytest.approx(TOP)
    assert [charts.nice_max(v) for v in (0, 0.3, 1, 1.2, 2.2, 3, 7, 12, 0.004)] == pytest.approx(
        [1, 0.5, 1, 2, 2.5, 5, 10, 20, 0.005]
    )
