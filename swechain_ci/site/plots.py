"""Line plots as inline SVG, written by hand: no plotting library, no script, every label escaped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC", "#EECA3B"]


@dataclass
class Series:
    label: str
    values: Sequence[float | None]  # fractions 0..1; None leaves a gap
    dashed: bool = False


def line_plot(
    title: str,
    x_labels: Sequence[str],
    series: Sequence[Series],
    *,
    css_class: str = "plot",
    width: int = 640,
    height: int = 300,
) -> Markup:
    """A percent-scale line plot; one polyline per series, points where values exist, a legend below."""
    left, right, top, bottom = 48, 16, 28, 44
    legend_rows = len(series)
    full_height = height + 18 * legend_rows
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(x_labels)

    def x(i: int) -> float:
        return left + (plot_w * (i + 0.5) / n if n else 0)

    def y(v: float) -> float:
        return top + plot_h * (1 - v)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{escape(css_class)}" role="img" '
        f'viewBox="0 0 {width} {full_height}" width="{width}" height="{full_height}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{width / 2:.0f}" y="16" text-anchor="middle" class="plot-title">{escape(title)}</text>',
    ]
    for pct in range(0, 101, 20):
        yy = y(pct / 100)
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" class="tick">{pct}%</text>')
    step = max(1, n // 16)
    for i, label in enumerate(x_labels):
        if i % step == 0 or i == n - 1:
            parts.append(
                f'<text x="{x(i):.1f}" y="{top + plot_h + 16}" text-anchor="middle" class="tick">{escape(label)}</text>'
            )
    for k, s in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        runs: list[list[str]] = [[]]
        for i, v in enumerate(s.values):
            if v is None:
                runs.append([])
                continue
            runs[-1].append(f"{x(i):.1f},{y(v):.1f}")
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{color}">'
                f"<title>{escape(s.label)}: {escape(x_labels[i])}: {100 * v:.1f}%</title></circle>"
            )
        for points in runs:
            if len(points) > 1:
                parts.append(
                    f'<polyline points="{" ".join(points)}" fill="none" stroke="{color}" stroke-width="2"{dash}/>'
                )
        lx, ly = left, height + 18 * k - 4
        parts.append(
            f'<line x1="{lx:.1f}" x2="{lx + 18:.1f}" y1="{ly - 4:.1f}" y2="{ly - 4:.1f}" stroke="{color}" '
            f'stroke-width="2"{dash}/>'
        )
        parts.append(f'<text x="{lx + 24:.1f}" y="{ly:.1f}" class="legend">{escape(s.label)}</text>')
    parts.append("</svg>")
    return Markup("\n".join(parts))
