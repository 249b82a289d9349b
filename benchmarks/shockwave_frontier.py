"""The Shockwave fairness-efficiency frontier: a sweep of k and of the planner's numerics.

Run as ``.venv/bin/python benchmarks/shockwave_frontier.py --workers 2``. For each trace
(default: the authors' canonical trace and ``canonical-analogue-120``, both on 32 GPUs;
``--trace PATH:GPUS`` adds any trace file, repeatable) it plays

- ``shockwave`` with every k of ``--ks`` (default 0, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3) under
  both numerics: ``faithful`` (the published objective, solved exactly: our default) and
  ``authors`` (the emulation of the authors' implementation);
- our variants ``shockwave-normalized`` and ``shockwave-fair``;
- the reference points ``gavel``, ``themis`` and ``srtf``.

Shockwave's solves stop on work limits (docs/SOLVERS.md, "Work limits"), so results do not
depend on the machine's load; ``--time-limit`` adds the opt-in wall-clock cap. Prints one JSON object: every point's metrics on both JCT bases (ours,
from arrival, the authors' basis; and from admission), the Pareto-optimal points of the k sweeps,
and the check of the ``shockwave-fair`` target on each trace (unfair <= 10% with makespan
<= 1.02x the default ``shockwave``, and no k-sweep point better on both). A table goes to
stderr. The figure (``--figure``, default ``docs/img/shockwave_frontier.png``) has one row
per trace: makespan against unfair fraction, and average JCT against worst FTF, JCT from
arrival, the authors' basis (so the authors' published canonical point can sit next to ours).
``--from-json FILE`` redraws the figure from an earlier run's output without playing.

The reinforcement-learning benchmark's trace suites do not exist yet; pass their traces
with ``--trace`` once they do.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from shockwave_agents import make_agent
from shockwave_gym.metrics import ADMISSION_BASIS
from shockwave_gym.reference import authors_canonical
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, load_trace

DEFAULT_TRACES = ("authors-canonical-120", "canonical-analogue-120")
DEFAULT_KS = (0.0, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3)
NUMERICS = ("faithful", "authors")
VARIANTS = ("shockwave-normalized", "shockwave-fair")
REFERENCES = ("gavel", "themis", "srtf")
#: metric (JCT from arrival, the authors' basis) -> the same metric with JCT from admission
METRICS = ADMISSION_BASIS
DEFAULT_K = 1e-3
TARGET_UNFAIR = 0.10
TARGET_MAKESPAN_RATIO = 1.02
REPO = Path(__file__).resolve().parents[1]


def parse_trace(spec: str) -> tuple[str, int]:
    """``NAME`` (bundled) or ``PATH:GPUS``."""
    if spec in BUNDLED_GPUS:
        return spec, BUNDLED_GPUS[spec]
    path, sep, gpus = spec.rpartition(":")
    if not sep or not gpus.isdigit() or int(gpus) < 1:
        raise SystemExit(f"--trace {spec!r}: give a bundled trace name or PATH:GPUS (GPUS a whole number >= 1)")
    if not Path(path).is_file():
        raise SystemExit(f"--trace {spec!r}: no such file {path!r}")
    return path, int(gpus)


def load(spec: str, gpus: int):
    throughputs = ThroughputTable.builtin("v100") if spec == "authors-canonical-120" else None
    return load_trace(spec, throughputs, gpus=gpus), throughputs


def episode(task: tuple[str, int, str, dict, dict]) -> dict:
    spec, gpus, agent, options, label = task
    trace, throughputs = load(spec, gpus)
    outcome = run_episode(trace, make_agent(agent, **options), SimConfig(gpus=gpus), throughputs, progress=False)
    m = outcome.metrics
    return {"trace": trace.name, **label, "agent": agent,
            "ours": {key: m[key] for key in METRICS},
            "admission_basis": {key: m[name] for key, name in METRICS.items()},
            "episode_wall_s": round(outcome.wall_s, 2)}


def tasks_for(spec: str, gpus: int, ks, time_limit_s: float | None = None) -> list[tuple]:
    limits = {} if time_limit_s is None else {"time_limit_s": time_limit_s, "rank_time_limit_s": time_limit_s}
    tasks = [(spec, gpus, "shockwave", {**limits, "k": k, "numerics": numerics}, {"numerics": numerics, "k": k})
             for numerics in NUMERICS for k in ks]
    tasks += [(spec, gpus, name, dict(limits), {"numerics": None, "k": None}) for name in VARIANTS]
    tasks += [(spec, gpus, name, {}, {"numerics": None, "k": None}) for name in REFERENCES]
    return tasks


def pareto(points: list[dict], x: str, y: str, basis: str = "ours") -> list[dict]:
    """The points no other point beats on both ``x`` and ``y`` (lower is better)."""
    def beaten(p):
        return any(q[basis][x] <= p[basis][x] and q[basis][y] <= p[basis][y]
                   and (q[basis][x] < p[basis][x] or q[basis][y] < p[basis][y]) for q in points)
    return [{"numerics": p["numerics"], "k": p["k"]} for p in points if not beaten(p)]


def target_check(points: list[dict]) -> dict | None:
    """Whether ``shockwave-fair`` meets its target on this trace, on our basis."""
    default = next((p for p in points if p["agent"] == "shockwave" and p["numerics"] == "faithful" and p["k"] == DEFAULT_K), None)
    fair = next((p for p in points if p["agent"] == "shockwave-fair"), None)
    if default is None or fair is None:
        return None
    sweep = [p for p in points if p["agent"] == "shockwave" and p["k"] is not None]
    ratio = fair["ours"]["makespan_s"] / default["ours"]["makespan_s"]
    better = [{"numerics": p["numerics"], "k": p["k"]} for p in sweep
              if p["ours"]["makespan_s"] <= fair["ours"]["makespan_s"] and p["ours"]["unfair_fraction"] <= fair["ours"]["unfair_fraction"]]
    return {"unfair_fraction": fair["ours"]["unfair_fraction"], "makespan_over_default": ratio,
            "unfair_met": fair["ours"]["unfair_fraction"] <= TARGET_UNFAIR,
            "makespan_met": ratio <= TARGET_MAKESPAN_RATIO, "sweep_points_at_least_as_good": better}


def summarise(results: list[dict], specs: list[tuple[str, int]]) -> dict:
    rows = []
    for spec, gpus in specs:
        name = Path(spec).stem if spec not in BUNDLED_GPUS else spec
        points = [r for r in results if r["trace"] == name]
        sweep = [p for p in points if p["agent"] == "shockwave"]
        rows.append({"trace": name, "gpus": gpus, "points": points,
                     "pareto_makespan_unfair": pareto(sweep, "makespan_s", "unfair_fraction"),
                     "pareto_jct_worst_ftf": pareto(sweep, "avg_jct_s", "worst_ftf"),
                     "shockwave_fair_target": target_check(points)})
    ref = authors_canonical().policy("shockwave")
    authors = {"makespan_s": ref.makespan_s, "avg_jct_s": ref.avg_jct_s, "worst_ftf": ref.worst_ftf,
               "unfair_fraction": ref.unfair_fraction}
    return {"benchmark": "shockwave_frontier", "baseline": "shockwave (faithful numerics, k=1e-3), same run",
            "authors_published_canonical": authors, "traces": rows,
            "note": "the RL benchmark's trace suites do not exist yet; add traces with --trace PATH:GPUS"}


def label_of(p: dict) -> str:
    return f"shockwave {p['numerics']} k={p['k']:g}" if p["agent"] == "shockwave" else p["agent"]


def print_table(record: dict) -> None:
    for row in record["traces"]:
        print(f"== {row['trace']} ({row['gpus']} GPUs); from arrival (the authors' basis) / from admission", file=sys.stderr)
        for p in row["points"]:
            o, a = p["ours"], p.get("admission_basis", p.get("authors_basis"))
            print(f"  {label_of(p):34s} makespan {o['makespan_s']:8.0f}  jct {o['avg_jct_s']:7.0f}/{a['avg_jct_s']:7.0f}"
                  f"  worst {o['worst_ftf']:.3f}/{a['worst_ftf']:.3f}  unfair {o['unfair_fraction']:.3f}/{a['unfair_fraction']:.3f}",
                  file=sys.stderr)


#: Offsets (points) tried in order for a k label: beside, below, left, above, farther out.
LABEL_OFFSETS_PT = ((5, 3), (5, -10), (-5, 3), (-5, -10), (0, 7), (0, -14), (9, -3), (-9, -3),
                    (12, 10), (-12, 10), (12, -18), (-12, -18), (0, 16), (0, -22))
LABEL_FONT_PT = 7


def _overlaps(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(ax, requests: list[tuple[float, float, str, str]], obstacles: list[tuple[float, float]]) -> list:
    """Annotate ``(x, y, text, colour)`` points without overlaps: points of one colour at
    the same spot share one label ("0, 1e-05"), and each label takes the first offset of
    :data:`LABEL_OFFSETS_PT` whose box meets no placed label and no marker (``obstacles``,
    data coordinates) and stays inside the axes; else the least crowded. Call after the axes'
    limits and size are final. Returns the texts."""
    import numpy as np

    scale = ax.figure.dpi / 72.0
    to_px = ax.transData.transform
    groups: list[dict] = []
    for x, y, text, color in requests:
        px = to_px((x, y))
        for group in groups:
            if group["color"] == color and float(np.hypot(*(group["px"] - px))) < 3 * scale:
                group["texts"].append(text)
                break
        else:
            groups.append({"px": px, "xy": (x, y), "texts": [text], "color": color})
    markers = [to_px(point) for point in obstacles] + [group["px"] for group in groups]
    pad = 4 * scale
    frame = ax.bbox
    boxes, texts = [], []
    for group in groups:
        text = ", ".join(dict.fromkeys(group["texts"]))
        size = (0.62 * LABEL_FONT_PT * len(text) * scale, 1.2 * LABEL_FONT_PT * scale)
        candidates = [(offset, _label_box(group["px"], offset, size, scale)) for offset in LABEL_OFFSETS_PT]

        def crowding(candidate, placed=boxes):
            box = candidate[1]
            hits = sum(_overlaps(box, other) for other in placed)
            hits += sum(box[0] - pad < mx < box[2] + pad and box[1] - pad < my < box[3] + pad for mx, my in markers)
            inside = frame.x0 <= box[0] and box[2] <= frame.x1 and frame.y0 <= box[1] and box[3] <= frame.y1
            return hits + (0 if inside else 0.5)  # leaving the axes is better than covering a label

        (dx, dy), box = min(candidates, key=crowding)  # the first clear one, else the least crowded
        boxes.append(box)
        texts.append(ax.annotate(text, group["xy"], textcoords="offset points", xytext=(dx, dy),
                                 ha="right" if dx < 0 else "left", va="bottom", fontsize=LABEL_FONT_PT,
                                 color=group["color"]))
    return texts


def _label_box(anchor_px, offset_pt: tuple[float, float], size_px: tuple[float, float], scale: float) -> tuple:
    """Display-space box of a label at ``offset_pt`` from ``anchor_px`` (left-aligned to the
    right of the point, right-aligned to its left; bottom at the offset)."""
    (dx, dy), (width, height) = offset_pt, size_px
    x0 = anchor_px[0] + dx * scale - (width if dx < 0 else 0.0)
    y0 = anchor_px[1] + dy * scale
    return (x0, y0, x0 + width, y0 + height)


def draw(record: dict, path: Path | None) -> object:
    """One row per trace: makespan vs unfair fraction, avg JCT vs worst FTF (authors' basis).
    Drawn on its own Agg canvas (the caller's matplotlib backend is left alone); saved to
    ``path`` when given. Returns the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = record["traces"]
    fig = Figure(figsize=(11, 4.2 * len(rows)), dpi=110)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(rows), 2, squeeze=False)
    styles = {"faithful": ("tab:blue", "o"), "authors": ("tab:orange", "s")}
    marks = {"gavel": ("tab:gray", "D"), "themis": ("tab:brown", "v"), "srtf": ("tab:olive", "^"),
             "shockwave-normalized": ("tab:purple", "P"), "shockwave-fair": ("tab:green", "*")}
    panels = (("unfair_fraction", "makespan_s", "unfair fraction (FTF > 1.05)", "makespan (s)"),
              ("worst_ftf", "avg_jct_s", "worst FTF", "average JCT (s)"))
    pending = []
    for axes_row, row in zip(axes, rows, strict=True):
        for ax, (x, y, xlabel, ylabel) in zip(axes_row, panels, strict=True):
            requests, obstacles = [], []
            for numerics, (color, marker) in styles.items():
                sweep = sorted((p for p in row["points"] if p["agent"] == "shockwave" and p["numerics"] == numerics),
                               key=lambda p: p["k"])
                xs = [p["ours"][x] for p in sweep]
                ys = [p["ours"][y] for p in sweep]
                ax.plot(xs, ys, marker=marker, color=color, label=f"shockwave, {numerics} numerics (k sweep)")
                requests += [(xv, yv, f"{p['k']:g}", color) for p, xv, yv in zip(sweep, xs, ys, strict=True)]
            for p in row["points"]:
                if p["agent"] in marks:
                    color, marker = marks[p["agent"]]
                    point = (p["ours"][x], p["ours"][y])
                    ax.scatter(*point, color=color, marker=marker, s=140 if marker == "*" else 60, label=p["agent"],
                               zorder=3)
                    obstacles.append(point)
            if row["trace"] == "authors-canonical-120":
                a = record["authors_published_canonical"]
                ax.scatter(a[x], a[y], color="black", marker="X", s=80, label="authors' published shockwave", zorder=4)
                obstacles.append((a[x], a[y]))
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(f"{row['trace']} ({row['gpus']} GPUs)", fontsize=10)
            ax.grid(alpha=0.3)
            pending.append((ax, requests, obstacles))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("Shockwave fairness-efficiency frontier (labels: k; JCT and FTF from arrival, the authors' basis)",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    for ax, requests, obstacles in pending:  # limits and sizes are final: place the k labels
        ax.set_xlim(ax.get_xlim())
        ax.set_ylim(ax.get_ylim())
        place_labels(ax, requests, obstacles)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="append", default=[], help="bundled NAME or PATH:GPUS (repeatable)")
    parser.add_argument("--no-default-traces", action="store_true", help="play only the --trace traces")
    parser.add_argument("--ks", type=float, nargs="+", default=list(DEFAULT_KS))
    parser.add_argument("--workers", type=int, default=1, help="parallel episodes (at most 2 on a shared 2-core machine)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="opt-in wall-clock cap of Shockwave's solves, seconds (default none: work limits only)")
    parser.add_argument("--figure", type=Path, default=REPO / "docs" / "img" / "shockwave_frontier.png")
    parser.add_argument("--from-json", type=Path, help="redraw the figure from this run's JSON output")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        record = json.loads(args.from_json.read_text())
    else:
        names = [] if args.no_default_traces else list(DEFAULT_TRACES)
        specs = [parse_trace(spec) for spec in names + args.trace]
        if not specs:
            raise SystemExit("no traces: give --trace or drop --no-default-traces")
        tasks = [task for spec, gpus in specs for task in tasks_for(spec, gpus, args.ks, args.time_limit)]
        if args.workers > 1:
            with ProcessPoolExecutor(args.workers) as pool:
                results = list(pool.map(episode, tasks))
        else:
            results = [episode(task) for task in tasks]
        record = summarise(results, specs)
        print(json.dumps(record, allow_nan=False))
    print_table(record)
    draw(record, args.figure)
    print(f"figure: {args.figure}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
