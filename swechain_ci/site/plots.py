"""The site's plots, drawn with matplotlib as inline SVG (text kept as text, so it scales and reads).

Every label comes from a run or an agent, so it is hostile: matplotlib's SVG writer escapes XML,
and ``_plain`` keeps mathtext from reading ``$`` in a name. The figures are the paper's views:
a trajectory per run (cumulative resolving per step), Build → Build+Fix in the precision ×
resolving plane with F1 iso-curves (its Figure 3), agent × chain heatmaps ordered by difficulty
(Figures 2, 4, 5) and cumulative resolving per step of every agent on a chain (Figure 6).
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
from markupsafe import Markup
from matplotlib import rc_context
from matplotlib.figure import Figure  # a Figure of its own draws without pyplot's global state or a GUI backend
from matplotlib.typing import RcKeyType

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC", "#EECA3B"]
# Figures are drawn small so that, scaled to a phone's width, their text stays about 11 px.
WIDTH_IN = 5.6
STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "font.size": 12, "axes.titlesize": 12, "legend.fontsize": 11}
MAX_LABEL = 40  # characters of a name from a run (an agent, a chain, a version)
MAX_TITLE = 120


@dataclass
class Series:
    label: str
    values: Sequence[float | None]  # fractions 0..1; None leaves a gap
    dashed: bool = False


@dataclass
class Move:
    """One agent's chain-average figures, Build and Build+Fix (fractions; None where undefined)."""

    label: str
    build: tuple[float | None, float | None]  # precision, resolving
    build_fix: tuple[float | None, float | None]


def _plain(label: str, limit: int = MAX_LABEL) -> str:
    """A label as literal text: no mathtext, no control characters, bounded."""
    text = re.sub(r"[\x00-\x1f\x7f]", " ", label)[:limit]
    return text.replace("$", r"\$")


def _svg(fig: Figure, css_class: str, title: str) -> Markup:
    buffer = io.StringIO()
    with rc_context({"svg.hashsalt": f"{css_class}:{title}"}):  # ids unique per figure on a page
        fig.savefig(buffer, format="svg", bbox_inches="tight")
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    # Scale to the frame: drop the fixed size, keep the viewBox; role and class for the page's CSS.
    svg = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r"<svg\1", svg, count=1)
    return Markup(svg.replace("<svg", f'<svg class="{css_class}" role="img"', 1))


def line_plot(title: str, x_labels: Sequence[str], series: Sequence[Series], *, css_class: str = "plot") -> Markup:
    """A percent-scale line plot; dashed series are drawn last, with hollow markers, so that a
    series equal to another stays visible over it."""
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 3.0 + 0.18 * len(series)))
        ax = fig.add_subplot()
        xs = list(range(len(x_labels)))
        ordered = sorted(enumerate(series), key=lambda pair: pair[1].dashed)
        salt = hashlib.sha256(title.encode()).hexdigest()[:8]
        for k, s in ordered:
            ys = [float("nan") if v is None else 100 * v for v in s.values]
            ax.plot(
                xs,
                ys,
                color=PALETTE[k % len(PALETTE)],
                linestyle="--" if s.dashed else "-",
                linewidth=1.6 if s.dashed else 2.2,
                marker="o",
                markersize=6 if s.dashed else 4,
                markerfacecolor="white" if s.dashed else PALETTE[k % len(PALETTE)],
                label=_plain(s.label),
                zorder=3 if s.dashed else 2,
                gid=f"series-{k}-{salt}",  # the SVG group of this series' line and points
            )
        step = max(1, len(x_labels) // 12)
        ax.set_xticks(xs[::step], [_plain(x) for x in x_labels][::step])
        ax.set_ylim(-3, 103)
        ax.set_ylabel("%")
        ax.grid(alpha=0.3)
        ax.set_title(_plain(title, MAX_TITLE))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=1, frameon=False)
        return _svg(fig, css_class, title)


def _f1_curves(ax) -> None:
    for f1 in (0.2, 0.4, 0.6, 0.8):
        ps = [p / 200 for p in range(1, 201)]
        pairs = [(p, f1 * p / (2 * p - f1)) for p in ps if 2 * p - f1 > 0]
        pairs = [(p, r) for p, r in pairs if 0 <= r <= 1]
        ax.plot([100 * p for p, _ in pairs], [100 * r for _, r in pairs], color="#bbb", linewidth=0.8, zorder=1)
        if pairs:
            p, r = min(pairs, key=lambda pr: abs(pr[0] - pr[1]))
            ax.annotate(
                f"F1={f1:.1f}", (100 * p, 100 * r), fontsize=8, color="#888", xytext=(2, 2), textcoords="offset points"
            )


def build_to_fix_plot(title: str, moves: Sequence[Move], *, css_class: str = "plot moves") -> Markup:
    """Each agent's Build point and an arrow to its Build+Fix point, precision (x) by resolving (y),
    over F1 iso-curves (the paper's Figure 3). An agent with an undefined figure is left out."""
    with rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, WIDTH_IN))
        ax = fig.add_subplot()
        _f1_curves(ax)
        for k, move in enumerate(m for m in moves if None not in (*m.build, *m.build_fix)):
            color = PALETTE[k % len(PALETTE)]
            (bp, br), (fp, fr) = move.build, move.build_fix
            assert bp is not None and br is not None and fp is not None and fr is not None
            ax.scatter([100 * bp], [100 * br], s=36, facecolors="white", edgecolors=color, zorder=3)
            ax.scatter([100 * fp], [100 * fr], s=44, color=color, zorder=4, label=_plain(move.label))
            if (bp, br) != (fp, fr):
                ax.annotate(
                    "",
                    (100 * fp, 100 * fr),
                    (100 * bp, 100 * br),
                    arrowprops={"arrowstyle": "->", "color": color, "linewidth": 1.4},
                    zorder=2,
                )
        ax.set_xlim(0, 102)
        ax.set_ylim(0, 102)
        ax.set_xlabel("precision % (hollow: Build, filled: Build+Fix)")
        ax.set_ylabel("resolving %")
        ax.set_title(_plain(title, MAX_TITLE))
        ax.grid(alpha=0.2)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=2, frameon=False)
        return _svg(fig, css_class, title)


def heatmap(
    title: str,
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    css_class: str = "plot heatmap",
) -> Markup:
    """A percent heatmap, rows × columns, each cell labelled; an undefined cell is grey and says n/a."""
    with rc_context(STYLE):
        fig = Figure(figsize=(max(WIDTH_IN, 1.6 + 0.75 * len(columns)), 1.4 + 0.42 * len(rows)))
        ax = fig.add_subplot()
        grid = [[float("nan") if v is None else 100 * v for v in row] for row in values]
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=100, aspect="auto")
        for i, row in enumerate(values):
            for j, v in enumerate(row):
                text = "n/a" if v is None else f"{100 * v:.0f}"
                ax.text(
                    j, i, text, ha="center", va="center", fontsize=9, color="black" if v is None or v > 0.6 else "white"
                )
        ax.set_xticks(range(len(columns)), [_plain(c) for c in columns], rotation=30, ha="right")
        ax.set_yticks(range(len(rows)), [_plain(r) for r in rows])
        ax.set_title(_plain(title, MAX_TITLE))
        return _svg(fig, css_class, title)
