"""Gantt charts of an episode, drawn from an :class:`~shockwave_gym.metrics.EpisodeResult`
(finished or partial), so the env, the harness and scripts share them::

    from shockwave_gym.gantt import gantt_figure, gantt_rgb
    fig = gantt_figure(outcome.result)       # matplotlib Figure (Agg canvas, no display)
    fig.savefig("gantt.png")
    image = gantt_rgb(outcome.result)        # (H, W, 3) uint8

matplotlib is imported when a chart is drawn, not with this module.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.metrics import EpisodeResult


def gantt_figure(result: EpisodeResult, *, title: str | None = None, width_in: float = 10.0):
    """A two-panel Gantt of ``result``: GPUs busy per round, and one row per job.

    Job rows show the waiting span (arrival to completion, or to the end of a truncated
    episode) in light grey and each round the job held its GPUs as a bar, coloured by gang;
    a dot marks the completion. Returns a :class:`matplotlib.figure.Figure` with an Agg
    canvas; no display is needed.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    n = result.num_jobs
    height_in = 2.0 + min(12.0, 0.12 * n + 1.0)
    fig = Figure(figsize=(width_in, height_in), dpi=100)
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, 1, height_ratios=[1.0, max(2.0, height_in - 2.0)], hspace=0.08)
    ax_gpu = fig.add_subplot(grid[0])
    ax_jobs = fig.add_subplot(grid[1], sharex=ax_gpu)
    hours = 1.0 / 3600.0
    end_s = result.end_time_s if result.num_rounds else 0.0

    if result.num_rounds:
        edges = np.append(result.round_start_s, result.round_end_s[-1]) * hours
        busy = np.append(result.round_gpus_busy, result.round_gpus_busy[-1])
        ax_gpu.step(edges, busy, where="post", color="tab:blue", linewidth=1.0)
        ax_gpu.fill_between(edges, busy, step="post", alpha=0.3, color="tab:blue")
    ax_gpu.axhline(result.gpus, color="black", linewidth=0.8, linestyle="--")
    ax_gpu.set_ylim(0, result.gpus * 1.1)
    ax_gpu.set_ylabel("GPUs busy")
    ax_gpu.tick_params(labelbottom=False)

    completion = result.completion_s
    wait_end = np.where(np.isnan(completion), end_s, completion)
    wait = [
        [(a * hours, j - 0.12), (e * hours, j - 0.12), (e * hours, j + 0.12), (a * hours, j + 0.12)]
        for j, (a, e) in enumerate(zip(result.arrival_s.tolist(), wait_end.tolist(), strict=True))
    ]
    ax_jobs.add_collection(PolyCollection(wait, facecolors="0.85", edgecolors="none"))
    colors = {1: "tab:green", 2: "tab:orange", 4: "tab:red", 8: "tab:purple"}
    bars, bar_colors = [], []
    for start, ids, run_s in zip(result.round_start_s.tolist(), result.round_job_ids, result.round_run_s, strict=True):
        for j, run in zip(ids.tolist(), run_s.tolist(), strict=True):
            x0, x1 = start * hours, (start + run) * hours
            bars.append([(x0, j - 0.38), (x1, j - 0.38), (x1, j + 0.38), (x0, j + 0.38)])
            bar_colors.append(colors.get(int(result.gang[j]), "tab:gray"))
    if bars:
        ax_jobs.add_collection(PolyCollection(bars, facecolors=bar_colors, edgecolors="none"))
    done = ~np.isnan(completion)
    ax_jobs.scatter(completion[done] * hours, np.flatnonzero(done), s=6, color="black", zorder=3)
    ax_jobs.set_ylim(n - 0.5, -0.5)
    ax_jobs.set_xlim(0, max(end_s, float(np.nanmax(wait_end)) if n else 0.0, 1.0) * hours * 1.01)
    ax_jobs.set_ylabel("job id")
    ax_jobs.set_xlabel("time (h)")
    handles = [
        ax_jobs.plot([], [], color=c, linewidth=6, label=f"gang {g}")[0]
        for g, c in colors.items()
        if np.any(result.gang == g)
    ]
    handles.append(ax_jobs.plot([], [], color="0.85", linewidth=6, label="waiting")[0])
    handles.append(ax_jobs.scatter([], [], s=6, color="black", label="completion"))
    label = title if title is not None else f"{result.trace_name or 'episode'} on {result.gpus} GPUs"
    ax_gpu.set_title(label, fontsize=10)
    bottom_in = 0.75  # x label and legend, below the job panel
    fig.legend(handles=handles, loc="lower center", fontsize=8, ncol=len(handles), frameon=False)
    fig.subplots_adjust(left=0.08, right=0.98, top=1 - 0.35 / height_in, bottom=bottom_in / height_in)
    return fig


def gantt_rgb(result: EpisodeResult, **kwargs) -> np.ndarray:
    """:func:`gantt_figure` rasterised to an (H, W, 3) uint8 array."""
    fig = gantt_figure(result, **kwargs)
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
