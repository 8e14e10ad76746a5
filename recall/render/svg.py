"""What every chart of the HTML pages starts with: an SVG of a size, on white, with a
label for screen readers, and the grid of a percent axis."""

from __future__ import annotations

from collections.abc import Callable

from recall.render.escape import html as _e

PERCENT_TICKS = (0, 25, 50, 75, 100)


def svg_start(width: float, height: float, label: str) -> list[str]:
    """The chart's opening tag and its white background (a page printed dark stays
    readable)."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(label)}">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]


def percent_grid(
    left: float, plot_w: float, y: Callable[[float], float], unit: str = ""
) -> list[str]:
    """A light line across the plot at each PERCENT_TICKS value, labelled on its left."""
    return [
        f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + plot_w}" y2="{y(tick):.1f}" '
        f'stroke="#e5e5e5"/><text x="{left - 6}" y="{y(tick) + 4:.1f}" '
        f'text-anchor="end">{tick}{unit}</text>'
        for tick in PERCENT_TICKS
    ]
