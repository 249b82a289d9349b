"""Paper-style figures of an evaluation, one set per trace, drawn with matplotlib.

Each figure is a :class:`matplotlib.figure.Figure` on its own Agg canvas, outside pyplot:
drawing them never changes the caller's backend, so inline plots in a notebook keep
showing after ``evaluate(..., out=...)``.

- ``relative_bars.png``: makespan, avg JCT, mean and p95 fair-share ρ, and the paper's worst
  FTF and unfair fraction (static contention) of each agent relative to the reference (seed
  mean; whiskers span the seeds);
- ``ftf_cdf.png``: CDF of per-job fair-share ρ = JCT / T_fair per agent (all seeds pooled);
- ``jct_cdf.png``: CDF of job completion time per agent (all seeds pooled);
- ``utilization.png``: useful GPU-seconds / capacity over time per agent (first seed;
  restart overhead counts as idle, as in the metric);
- ``gantt.png``: which job held GPUs when, for one chosen cell.

Our four charts have fixed pixel sizes (:data:`FIGURE_PIXELS`); the Gantt chart is
:data:`GANTT_WIDTH_IN` wide and as tall as the renderer makes it for the number of jobs.
Files are written atomically.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from shockwave_gym.harness.store import safe_name, save_figure_atomic
from shockwave_gym.harness.summary import HEADLINE
from shockwave_gym.metrics import UNFAIR_THRESHOLD, EpisodeResult

DPI = 100
#: File name -> size in inches; at :data:`DPI` this gives :data:`FIGURE_PIXELS`.
FIGURE_INCHES: dict[str, tuple[float, float]] = {
    "relative_bars.png": (11.0, 7.0),
    "ftf_cdf.png": (8.0, 5.0),
    "jct_cdf.png": (8.0, 5.0),
    "utilization.png": (9.0, 5.0),
}
FIGURE_PIXELS: dict[str, tuple[int, int]] = {
    name: (round(w * DPI), round(h * DPI)) for name, (w, h) in FIGURE_INCHES.items()
}
GANTT = "gantt.png"
GANTT_WIDTH_IN = 11.0
#: Every file written for a trace (the Gantt chart only for the chosen cell's trace).
FIGURE_FILES = (*FIGURE_INCHES, GANTT)
#: Time bins of the utilization curve.
UTILIZATION_BINS = 120

CellId = tuple[str, str, int]  # (trace, agent, seed)


def agent_colors(agents: list[str], reference: str) -> dict[str, tuple]:
    """One stable colour per agent (in the order given); the reference is black."""
    from matplotlib import colormaps

    others = [agent for agent in agents if agent != reference]
    palette = colormaps["tab10" if len(others) <= 10 else "tab20"]
    colors = {agent: palette(i % palette.N) for i, agent in enumerate(others)}
    return {agent: colors.get(agent, (0.0, 0.0, 0.0, 1.0)) for agent in agents}


def _new_figure(name: str, width_scale: float = 1.0):
    """A figure with its own Agg canvas, unknown to pyplot (no backend switch, nothing to close)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    width, height = FIGURE_INCHES[name]
    figure = Figure(figsize=(width * width_scale, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: Path) -> Path:
    save_figure_atomic(figure, path, dpi=DPI)
    return path


def relative_bars(summary: pd.DataFrame, results: pd.DataFrame, reference: str, trace: str, path: Path) -> Path:
    """The six headline metrics relative to ``reference`` (``summary`` from
    :func:`~.summary.summarise`); whiskers span the seeds when there are several."""
    rows = summary[summary["trace"] == trace]
    agents = list(rows["agent"])
    colors = agent_colors(agents, reference)
    # wider with many agents, so that every bar keeps a readable label (12 fit the base width)
    figure = _new_figure(path.name, width_scale=max(1.0, len(agents) / 12))
    axes = figure.subplots(2, 3).ravel()
    cells = results[results["trace"] == trace]
    for ax, (column, heading, _) in zip(axes, HEADLINE, strict=True):
        ref_value = float(rows.loc[rows["agent"] == reference, column].iloc[0]) if reference in agents else np.nan
        relative = ref_value > 0
        means = rows[f"{column}_rel"] if relative else rows[column]
        spread = cells.groupby("agent", sort=False)[column].agg(["min", "max"]).reindex(agents)
        scale = ref_value if relative else 1.0
        with np.errstate(invalid="ignore"):  # metrics of cells where no job finished are NaN
            low = np.nan_to_num(np.clip(means.to_numpy() - spread["min"].to_numpy() / scale, 0, None))
            high = np.nan_to_num(np.clip(spread["max"].to_numpy() / scale - means.to_numpy(), 0, None))
        x = np.arange(len(agents))
        several_seeds = bool((cells.groupby("agent")["seed"].nunique() > 1).any())
        ax.bar(x, means, color=[colors[a] for a in agents], yerr=[low, high] if several_seeds else None, capsize=3)
        if relative:
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
            ax.set_ylabel(f"relative to {reference}")
            ax.set_title(f"{heading} (lower is better)")
        else:
            ax.set_title(f"{heading}, absolute ({reference} is 0)")
        ax.set_xticks(x, agents, rotation=60, ha="right", rotation_mode="anchor", fontsize=8)
        ax.set_xlim(-0.6, len(agents) - 0.4)
    figure.suptitle(f"{trace}: relative to {reference} (seed mean)")
    return _save(figure, path)


def _cdf(ax, values: np.ndarray, **style) -> None:
    values = np.sort(values[np.isfinite(values)])
    if values.size:
        ax.step(values, np.arange(1, values.size + 1) / values.size, where="post", **style)


def cdf_figure(jobs: pd.DataFrame, column: str, trace: str, agents: list[str], reference: str, path: Path) -> Path:
    """CDF of a per-job column (``rho``, ``ftf`` or ``jct_s``) per agent, all seeds pooled."""
    colors = agent_colors(agents, reference)
    figure = _new_figure(path.name)
    ax = figure.subplots()
    rows = jobs[jobs["trace"] == trace]
    for agent in agents:
        values = pd.to_numeric(rows.loc[rows["agent"] == agent, column], errors="coerce").to_numpy(float)
        _cdf(ax, values, color=colors[agent], label=agent, linewidth=2.2 if agent == reference else 1.3)
    if column in ("rho", "ftf"):
        ax.axvline(UNFAIR_THRESHOLD, color="black", linestyle="--", linewidth=0.8, label=f"ρ = {UNFAIR_THRESHOLD}")
        ax.set_xlabel("fair-share ρ = JCT / T_fair (fluid equal-share reference)" if column == "rho"
                      else "the paper's static ρ = JCT / (isolated time × max(1, N/G))")
        ax.set_title(f"{trace}: ρ CDF (lower is fairer)")
    else:
        ax.set_xscale("log")
        ax.set_xlabel("job completion time (s, log scale)")
        ax.set_title(f"{trace}: JCT CDF")
    ax.set_ylabel("fraction of jobs")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # empty when no job finished in any cell
        ax.legend(fontsize=8, ncols=2)
    return _save(figure, path)


def utilization_curve(result: EpisodeResult, bins: int = UTILIZATION_BINS, end_s: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres in s, useful GPU fraction per bin): each round's useful GPU-seconds
    (run time minus restart overhead, times gang) spread evenly over the round."""
    counts = result.round_gpu_counts or tuple(result.gang[ids] for ids in result.round_job_ids)
    useful = np.array([
        float((gang * (run - over)).sum())
        for gang, run, over in zip(counts, result.round_run_s, result.round_overhead_s, strict=True)
    ])
    end_s = float(end_s if end_s is not None else (result.round_end_s.max() if result.num_rounds else 1.0))
    edges = np.linspace(0.0, max(end_s, 1e-9), bins + 1)
    # Cumulative useful GPU-seconds at each round boundary; linear inside a round, flat
    # across idle jumps between rounds.
    times = np.column_stack([result.round_start_s, result.round_end_s]).ravel()
    cumulative = np.concatenate([[0.0], np.cumsum(useful)])
    values = np.column_stack([cumulative[:-1], cumulative[1:]]).ravel()
    at_edges = np.interp(edges, times, values, left=0.0, right=cumulative[-1]) if times.size else np.zeros_like(edges)
    fraction = np.diff(at_edges) / (np.diff(edges) * result.gpus)
    return (edges[:-1] + edges[1:]) / 2, fraction


def utilization_figure(results: dict[str, EpisodeResult], trace: str, reference: str, path: Path) -> Path:
    """Utilization over time, one line per agent (``results``: agent -> first-seed result)."""
    colors = agent_colors(list(results), reference)
    end_s = max((r.round_end_s.max() for r in results.values() if r.num_rounds), default=1.0)
    figure = _new_figure(path.name)
    ax = figure.subplots()
    for agent, result in results.items():
        centres, fraction = utilization_curve(result, end_s=end_s)
        ax.plot(centres / 3600, fraction, color=colors[agent], label=agent, linewidth=2.2 if agent == reference else 1.2)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("useful GPU fraction")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{trace}: cluster utilization over time ({end_s / UTILIZATION_BINS:,.0f} s bins; restarts count as idle)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncols=2, loc="lower left")
    return _save(figure, path)


def gantt_figure(result: EpisodeResult, title: str, path: Path) -> Path:
    """Gantt chart of one cell, drawn by the environment's renderer (its height, and the
    layout within it, follow the number of jobs)."""
    from shockwave_gym.gantt import gantt_figure as render_gantt

    return _save(render_gantt(result, title=title, width_in=GANTT_WIDTH_IN), path)


def write_figures(
    results: pd.DataFrame,
    jobs: pd.DataFrame,
    summary: pd.DataFrame,
    episodes: dict[CellId, EpisodeResult],
    reference: str,
    out_dir: str | Path,
    gantt_cell: CellId,
) -> list[Path]:
    """All figures for every trace under ``out_dir/<trace>/``; returns the paths written.

    The Gantt chart is drawn for ``gantt_cell`` only, in that cell's trace directory.
    """
    out_dir = Path(out_dir)
    written = []
    traces = list(dict.fromkeys(results["trace"]))
    for trace in traces:
        folder = out_dir / safe_name(trace)
        agents = list(dict.fromkeys(results.loc[results["trace"] == trace, "agent"]))
        written.append(relative_bars(summary, results, reference, trace, folder / "relative_bars.png"))
        written.append(cdf_figure(jobs, "rho", trace, agents, reference, folder / "ftf_cdf.png"))
        written.append(cdf_figure(jobs, "jct_s", trace, agents, reference, folder / "jct_cdf.png"))
        firsts = results[results["trace"] == trace].drop_duplicates("agent")
        ordered = {row.agent: episodes[(trace, row.agent, int(row.seed))] for row in firsts.itertuples()}
        written.append(utilization_figure(ordered, trace, reference, folder / "utilization.png"))
    trace, agent, seed = gantt_cell
    title = f"{trace}: {agent}, seed {seed}"
    written.append(gantt_figure(episodes[gantt_cell], title, out_dir / safe_name(trace) / GANTT))
    return written
