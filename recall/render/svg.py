"""What every chart of the HTML pages starts with: an SVG of a size, on white, with a
label for screen readers, and the grid of a percent axis."""

from __future__ import annotations

import math
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
    return grid(left, plot_w, y, [(tick, f"{tick}{unit}") for tick in PERCENT_TICKS])


def grid(
    left: float, plot_w: float, y: Callable[[float], float], ticks: list[tuple[float, str]]
) -> list[str]:
    """A light line across the plot at each tick's value, its label on the left."""
    return [
        f'<line x1="{left}" y1="{y(value):.1f}" x2="{left + plot_w}" y2="{y(value):.1f}" '
        f'stroke="#e5e5e5"/><text x="{left - 6}" y="{y(value) + 4:.1f}" '
        f'text-anchor="end">{label}</text>'
        for value, label in ticks
    ]


MIN_SPAN = 0.5  # the narrowest axis, in points: a flat line is not drawn as noise


def data_axis(
    values: list[float], lowest: float = 0.0, highest: float = 100.0
) -> tuple[float, float, list[tuple[float, str]]]:
    """An axis scaled to the values (within lowest and highest), with round ticks: its
    bottom, its top, and each tick's value and label. A change of a fifth of a point is
    invisible on 0 to 100; on an axis of the data's own range it is a visible step."""
    if not values:
        return lowest, highest, [(float(t), str(t)) for t in PERCENT_TICKS]
    low, high = min(values), max(values)
    middle, span = (low + high) / 2, max(high - low, MIN_SPAN) * 1.3
    low, high = max(lowest, middle - span / 2), min(highest, middle + span / 2)
    raw = (high - low) / 4
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    low, high = math.floor(low / step) * step, math.ceil(high / step) * step
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if step / power == 2.5 else 0)
    count = round((high - low) / step)
    values = [round(low + i * step, digits + 2) for i in range(count + 1)]
    return values[0], values[-1], [(value, f"{value:.{digits}f}") for value in values]
