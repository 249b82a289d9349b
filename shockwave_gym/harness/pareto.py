"""Pareto figures of the headroom table: per suite, every agent on avg JCT (x) against mean
fair-share rho (y), makespan as colour; lower-left is better on both axes.

Each point is an agent's mean over the suite's traces (only agents with every trace). The
clairvoyant references of the JCT and fairness tasks are drawn as stars (they are not
schedulers: each optimises its own task). Points on the lower-left frontier (no other point
better on both axes) are ringed. Figures are matplotlib :class:`~matplotlib.figure.Figure`
objects on an Agg canvas, outside pyplot, written atomically.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from shockwave_gym.harness.store import save_figure_atomic

#: figure size in inches at :data:`DPI`
FIGURE_INCHES = (8.0, 5.5)
DPI = 100


def suite_points(metrics: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, tuple[float, float, float]]:
    """``metrics``: agent -> trace -> metrics; returns agent -> (mean avg JCT s, mean rho,
    mean makespan s) over the traces, for agents whose every trace has all three finite
    (an agent missing a trace that another agent has is left out)."""
    traces = {t for per_trace in metrics.values() for t in per_trace}
    points = {}
    for agent, per_trace in metrics.items():
        if set(per_trace) != traces:
            continue
        rows = [(m.get("avg_jct_s"), m.get("rho_mean"), m.get("makespan_s")) for m in per_trace.values()]
        if not rows or any(v is None or not math.isfinite(v) for row in rows for v in row):
            continue
        points[agent] = tuple(math.fsum(row[i] for row in rows) / len(rows) for i in range(3))
    return points


def frontier(points: Mapping[str, tuple[float, ...]]) -> list[str]:
    """The agents no other point beats on both avg JCT and mean rho (ties kept)."""
    out = []
    for name, (x, y, *_) in points.items():
        dominated = any(ox <= x and oy <= y and (ox < x or oy < y) for other, (ox, oy, *_) in points.items()
                        if other != name)
        if not dominated:
            out.append(name)
    return out


def _labels(points: Mapping[str, tuple[float, ...]], span: tuple[float, float],
            near: float = 0.015) -> list[tuple[str, tuple[float, float]]]:
    """One label per cluster of points closer than ``near`` of the axes' spans ``span`` on both
    axes (names joined with ", "), at the cluster's first point."""
    groups: list[tuple[tuple[float, float], list[str]]] = []
    for name, (x, y, *_) in points.items():
        for (gx, gy), names in groups:
            if abs(x - gx) <= near * span[0] and abs(y - gy) <= near * span[1]:
                names.append(name)
                break
        else:
            groups.append(((x, y), [name]))
    return [(", ".join(names), anchor) for anchor, names in groups]


def pareto_figure(points: Mapping[str, tuple[float, float, float]], title: str,
                  references: Mapping[str, tuple[float, float, float]] | None = None):
    """The figure: agents as circles, ``references`` (label -> point) as stars, one colour scale
    (makespan, hours) for both."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGURE_INCHES, dpi=DPI)
    ax = figure.add_subplot(1, 1, 1)
    references = dict(references or {})
    everything = [*points.values(), *references.values()]
    if not everything:
        ax.text(0.5, 0.5, "no complete agent", ha="center", va="center", transform=ax.transAxes)
        return figure
    low = min(p[2] for p in everything) / 3600.0
    high = max(p[2] for p in everything) / 3600.0
    if high <= low:
        high = low + 1e-6
    style = dict(cmap="viridis", vmin=low, vmax=high)
    names = list(points)
    scatter = ax.scatter([points[n][0] / 3600.0 for n in names], [points[n][1] for n in names],
                         c=[points[n][2] / 3600.0 for n in names], s=60, edgecolors="black", linewidths=0.5,
                         zorder=3, **style)
    best = set(frontier(points))
    if best:
        ax.scatter([points[n][0] / 3600.0 for n in names if n in best], [points[n][1] for n in names if n in best],
                   s=180, facecolors="none", edgecolors="tab:red", linewidths=1.2, zorder=2,
                   label="frontier (agents)")
    xs, ys = [p[0] for p in everything], [p[1] for p in everything]
    span = (max(xs) - min(xs) or 1.0, max(ys) - min(ys) or 1.0)
    for label, (x, y) in _labels(points, span):
        ax.annotate(label, (x / 3600.0, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    if references:
        labels = list(references)
        ax.scatter([references[n][0] / 3600.0 for n in labels], [references[n][1] for n in labels],
                   c=[references[n][2] / 3600.0 for n in labels], marker="*", s=220, edgecolors="black",
                   linewidths=0.6, zorder=4, **style)
        for label, (x, y) in _labels(references, span):
            ax.annotate(label, (x / 3600.0, y), textcoords="offset points", xytext=(5, -11), fontsize=8,
                        style="italic")
    ax.margins(0.15)
    figure.colorbar(scatter, ax=ax, label="makespan (h), suite mean")
    ax.set_xlabel("avg JCT (h), suite mean")
    ax.set_ylabel("mean fair-share ρ, suite mean")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if best:
        ax.legend(loc="best", fontsize=8)
    figure.tight_layout()
    return figure


def save_pareto(path: str | Path, points, title: str, references=None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure_atomic(pareto_figure(points, title, references), path)
    return path
