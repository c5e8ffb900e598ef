"""Charts for the HTML report as inline SVG, drawn by pygal (imported here, when a chart is drawn).

pygal is maintained, pure Python, and renders SVG itself. With ``js=[]`` its SVG links no
tooltip script online, and ``_no_scripts`` takes out the inline config script it still writes
(which holds the series' names, file-derived text, as JSON): the report stays one file that needs
no network and runs no script. Every text goes through pygal's XML serializer, which escapes it.
"""

from __future__ import annotations

import math
from typing import Any

WIDTH, HEIGHT = 720, 340
BINS = 12
COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def _config() -> dict[str, Any]:
    from pygal.style import Style

    style = Style(
        background="white",
        plot_background="white",
        colors=COLOURS,
        font_family="sans-serif",
        title_font_size=14,
        label_font_size=11,
        legend_font_size=11,
    )
    return {
        "js": [],
        "disable_xml_declaration": True,
        "explicit_size": True,
        "width": WIDTH,
        "height": HEIGHT,
        "style": style,
        "legend_at_bottom": True,
        "truncate_legend": 40,
    }


def _no_scripts(root: Any) -> Any:
    """An XML filter: the SVG without its ``<script>`` elements."""
    for parent in list(root.iter()):
        for child in list(parent):
            if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1] == "script":
                parent.remove(child)
    return root


def _render(chart: Any) -> str:
    chart.add_xml_filter(_no_scripts)
    return str(chart.render(is_unicode=True))


def curves_svg(curves: dict[str, list[float | None]]) -> str:
    """pass^k against k, one line per scenario; undefined points (n < k) are left out."""
    import pygal

    chart = pygal.Line(
        title="pass^k by k",
        x_title="k",
        y_title="pass^k",
        range=(0, 1),
        show_dots=False,
        show_minor_x_labels=False,
        **_config(),
    )
    longest = max((len(v) for v in curves.values()), default=0)
    chart.x_labels = [str(k) for k in range(1, longest + 1)]
    chart.x_labels_major = [str(k) for k in _major(longest)]
    for name, values in curves.items():
        chart.add(name, values)
    return _render(chart)


def histogram_svg(title: str, values: list[float], unit: str = "") -> str:
    """How ``values`` are spread: ``BINS`` equal bins from the smallest to the largest, the axis
    labelled at every other bin edge with as many decimals as tell the edges apart (``unit``:
    "$" for money, "s" for seconds, shown in ms below a second). Values all equal (every trial
    cost $0) are one bar at that value, labelled with it: never a made-up range."""
    import pygal

    low, high = min(values), max(values)
    config = {**_config(), "width": 520, "truncate_label": -1}
    if high == low:
        chart = pygal.Bar(title=title, y_title="trials", show_legend=False, **config)
        chart.x_labels = [f"all {len(values)} at {edge_label(low, 0.0, unit, high)}"]
        chart.add(title, [len(values)])
        return _render(chart)
    step = (high - low) / BINS
    counts = [0] * BINS
    for value in values:
        counts[min(int((value - low) / step), BINS - 1)] += 1
    bars = [(count, low + i * step, low + (i + 1) * step) for i, count in enumerate(counts)]
    edges = [low + i * step for i in range(0, BINS + 1, 2)]
    chart = pygal.Histogram(
        title=title,
        y_title="trials",
        show_legend=False,
        show_minor_x_labels=True,
        x_value_formatter=lambda x: edge_label(x, 2 * step, unit, high),
        **config,
    )
    chart.x_labels = edges
    chart.add(title, bars)
    return _render(chart)


def edge_label(value: float, spacing: float, unit: str = "", largest: float | None = None) -> str:
    """``value`` with one decimal finer than the ``spacing`` between labels, so that neighbours
    differ and each is close to its edge: "$0.0012", "0.5 ms", "1.25 s", "$0". Seconds below one
    (``largest`` < 1) read in milliseconds."""
    scale, suffix, prefix = 1.0, "", ""
    if unit == "s":
        ms = largest is not None and abs(largest) < 1
        scale, suffix = (1000.0, " ms") if ms else (1.0, " s")
    elif unit == "$":
        prefix = "$"
    shown, gap = value * scale, spacing * scale
    if shown == 0:
        return f"{prefix}0{suffix}"
    # one decimal finer than the spacing: each label is within a tenth of a bin of its edge
    decimals = (
        max(0, 1 - math.floor(math.log10(gap))) if gap > 0 else max(0, 2 - math.floor(math.log10(abs(shown))))
    )
    return f"{prefix}{shown:.{decimals}f}{suffix}"


def _major(n: int) -> list[int]:
    """About eight labelled ticks along 1 … n, 1 and n among them."""
    if n <= 8:
        return list(range(1, n + 1))
    step = -(-n // 8)
    return sorted({1, n, *range(step, n, step)})
