"""docs/BENCHMARKS.md's tables, generated from the benchmarks' saved results.

Each table lives in ``docs/data/benchmarks/NAME.json``:

- ``command``, ``date`` (YYYY-MM-DD) and ``machine``: the one generated line above the table;
- ``output``: the JSON object the script printed (``run`` saves it), from which
  :data:`TABLES` builds the table; or, for a run whose printed object was not kept,
  ``table`` (``columns`` and ``rows``) holding the figures that run printed.

A table in :data:`DERIVED` reads another benchmark's file (two tables from one run).

Between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->`` the page holds exactly
:func:`render` of that file; ``tests/test_benchmark_docs.py`` fails when it does not.

    python scripts/benchmark_docs.py run NAME [-- ARGS...]  # run benchmarks/NAME.py, save, rewrite the page
    python scripts/benchmark_docs.py write                  # rewrite the page's generated blocks
    python scripts/benchmark_docs.py check                  # exit 1 when a block is stale
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "benchmarks"
PAGE = ROOT / "docs" / "BENCHMARKS.md"
BLOCK = re.compile(r"<!-- generated: (?P<name>[\w.-]+) -->\n.*?<!-- end generated: (?P=name) -->", re.S)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _dev(value: float) -> str:
    return f"{value:+.2f}%"


def _fidelity(out: dict) -> tuple[list, list]:
    columns = ["agent", "makespan", "avg JCT", "worst FTF (ours / theirs)", "unfair % (ours / theirs)",
               "Spearman ρ of per-job JCT", "episode wall (best)"]
    rows = []
    for name, row in out["agents"].items():
        rows.append([name, _dev(row["makespan_s"]["deviation_pct"]), _dev(row["avg_jct_s"]["deviation_pct"]),
                     f"{row['worst_ftf']['ours']:.2f} / {row['worst_ftf']['authors']:.2f}",
                     f"{100 * row['unfair_fraction']['ours']:.1f} / {100 * row['unfair_fraction']['authors']:.1f}",
                     f"{row['spearman_jct']:.3f}", f"{row['episode_wall_s_best']:.2f} s"])
    return columns, rows


def _canonical(out: dict) -> tuple[list, list]:
    ours, theirs, dev, gavel = out["ours"], out["authors_shockwave"], out["deviation_pct"], out["gavel"]
    rows = [
        ["makespan", f"{ours['makespan_s']:,.0f} s", f"{theirs['makespan_s']:,.0f} s", _dev(dev["makespan_s"])],
        ["avg JCT", f"{ours['avg_jct_s']:,.0f} s", f"{theirs['avg_jct_s']:,.0f} s", _dev(dev["avg_jct_s"])],
        ["worst FTF", f"{ours['worst_ftf']:.3f}", f"{theirs['worst_ftf']:.3f}", _dev(dev["worst_ftf"])],
        ["unfair fraction", _pct(ours["unfair_fraction"]), _pct(theirs["unfair_fraction"]), ""],
        [f"makespan: our gavel ({gavel['makespan_s']:,.0f} s) / ours", f"{out['vs_gavel']['makespan_ratio']:.2f}×",
         f"{out['authors_vs_their_gavel']['makespan_ratio']:.2f}×", ""],
        [f"unfair fraction: our gavel ({_pct(gavel['unfair_fraction'])}) / ours",
         f"{out['vs_gavel']['unfair_fraction_ratio']:.1f}×", f"{out['authors_vs_their_gavel']['unfair_fraction_ratio']:.1f}×", ""],
        ["episode in-process", f"{out['in_process']['episode_wall_s']:.1f} s wall", "", ""],
    ]
    if "cli" in out:
        cli = out["cli"]
        rows.append(["whole CLI run", f"{cli['wall_s']:.1f} s wall, {cli['cpu_s']:.1f} s CPU",
                     f"{cli['baseline_wall_s']:.0f} s (fixed figure, bundled)", f"{cli['speedup_vs_authors_code']:.0f}× faster"])
    planner = out["planner"]
    rows.append(["re-plans", f"{planner['plans']} ({', '.join(f'{k} {v}' for k, v in planner['paths'].items())}); "
                 f"{planner.get('limit_hits', planner.get('time_limit_hits'))} work-limit hits", "", ""])
    return ["", "ours", "authors'", "deviation"], rows


def _noise(out: dict) -> tuple[list, list]:
    rows = []
    for level in out["levels"]:
        mean = level["mean"]
        rows.append([f"{level['noise']:.0%}", level["mode"], f"{mean['makespan_s']:,.0f} s", f"{mean['avg_jct_s']:,.0f} s",
                     f"{mean['worst_ftf']:.3f}", _pct(mean["unfair_fraction"])])
    gavel = out["gavel"]
    rows.append(["our gavel", "", f"{gavel['makespan_s']:,.0f} s", f"{gavel['avg_jct_s']:,.0f} s",
                 f"{gavel['worst_ftf']:.3f}", _pct(gavel["unfair_fraction"])])
    return ["noise", "mode", "makespan", "avg JCT", "worst FTF", "unfair"], rows


def _variants(out: dict) -> tuple[list, list]:
    rows = []
    for row in out["traces"]:
        a, b = row["shockwave"], row["shockwave_normalized"]
        rows.append([row["trace"], f"{a['makespan_s']:,.0f} → {b['makespan_s']:,.0f}",
                     f"{a['avg_jct_s']:,.0f} → {b['avg_jct_s']:,.0f}", f"{a['worst_ftf']:.3f} → {b['worst_ftf']:.3f}",
                     f"{_pct(a['unfair_fraction'])} → {_pct(b['unfair_fraction'])}"])
    return ["trace", "makespan (s)", "avg JCT (s)", "worst FTF", "unfair"], rows


def _readme_training(out: dict) -> tuple[list, list]:
    columns = ["run", "checkpoint written (step)", "jct score (mean per-trace ratio to FIFO)",
               "avg JCT / FIFO's", "last weights' jct score", "policy.npz (sha256)"]
    rows = [[index + 1, f"{run['selected_timesteps']:,}", f"{run['selected_score']:.3f}",
             f"{run['selected_avg_jct_s']:,.0f} / {run['fifo_avg_jct_s']:,.0f} s ({run['avg_jct_ratio_to_fifo']:.3f}×)",
             f"{run['final_score']:.3f}", f"`{run['policy_sha256']}`"]
            for index, run in enumerate(out["runs"])]
    return columns, rows


def _machine_independence(out: dict) -> tuple[list, list]:
    passes = ", ".join(f"{name} (load {load:.1f})" for name, load in out["load_1min_at_end"].items())
    columns = ["agent", "trace", "GPUs", "makespan (s)", "avg JCT (s)", "worst FTF", "unfair", "rounds",
               f"runs compared: {passes}, threads 1 and 4", "identical"]
    rows = [[cell["agent"], cell["trace"], cell["gpus"], f"{cell['makespan_s']:,.1f}", f"{cell['avg_jct_s']:,.1f}",
             f"{cell['worst_ftf']:.3f}", _pct(cell["unfair_fraction"]), cell["rounds"], len(cell["digests"]),
             "yes" if cell["identical"] else "**no**"] for cell in out["cells"]]
    return columns, rows


def _frontier(out: dict) -> tuple[list, list]:
    columns = ["trace", "point", "makespan", "avg JCT", "worst FTF", "unfair"]
    rows = []
    for trace in out["traces"]:
        points = trace["points"]

        def sweep(numerics: str, k: float, points=points) -> dict:
            return next(p["ours"] for p in points if p["agent"] == "shockwave" and p["numerics"] == numerics and p["k"] == k)

        def agent(name: str, points=points) -> dict:
            return next(p["ours"] for p in points if p["agent"] == name and p.get("k") is None)

        named = [("`shockwave` k=1e-3 (default)", sweep("faithful", 1e-3)), ("`shockwave` k=1e-4", sweep("faithful", 1e-4)),
                 ("`shockwave` k=0", sweep("faithful", 0.0)), ("`shockwave numerics=authors`", sweep("authors", 1e-3)),
                 ("`shockwave-fair`", agent("shockwave-fair"))]
        for i, (label, m) in enumerate(named):
            rows.append([trace["trace"] if i == 0 else "", label, f"{m['makespan_s']:,.0f}", f"{m['avg_jct_s']:,.0f}",
                         f"{m['worst_ftf']:.3f}", _pct(m["unfair_fraction"])])
        refs = [agent(name) for name in ("gavel", "themis", "srtf")]
        rows.append(["", "Gavel / Themis / SRTF", " / ".join(f"{m['makespan_s']:,.0f}" for m in refs),
                     " / ".join(f"{m['avg_jct_s']:,.0f}" for m in refs), " / ".join(f"{m['worst_ftf']:.2f}" for m in refs),
                     " / ".join(_pct(m["unfair_fraction"]) for m in refs)])
    return columns, rows


#: case: (its row in the timing table, its row in the metrics table)
_SCALE_CASES = {"canonical": ("authors' canonical, 120 jobs, 32 GPUs", "authors' canonical"),
                "scale-900": ("`scale-900`, 256 GPUs", "`scale-900`"),
                "scale-2000": ("generated 2,000 jobs, 512 GPUs", "2,000 jobs")}


def _process(run: dict) -> str:
    hits = run["planner"]["limit_hits"]
    hits = sum(hits.values()) if isinstance(hits, dict) else hits
    return f"{run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU" + (f" ({hits} work-limit hits)" if hits else "")


def _scale(out: dict) -> tuple[list, list]:
    columns = ["case", "`counts_method=mip`", "default (exact counts from 200 jobs)", "mip / default", "target (quiet)"]
    rows = []
    for name, case in out["cases"].items():
        mip = case.get("counts_mip")
        rows.append([_SCALE_CASES.get(name, (name,))[0],
                     _process(mip) if mip else "— (the same planner: HiGHS below 200 jobs)", _process(case),
                     f"{mip['wall_ratio_before_over_now']:.2f}×" if mip else "—",
                     f"≤ {case['target_wall_s']:.0f} s ({'met' if case['target_met_here'] else 'not met'})"])
    return columns, rows


def _scale_metrics(out: dict) -> tuple[list, list]:
    columns = ["case", "makespan: default vs mip", "avg JCT", "worst FTF", "unfair fraction"]
    rows = []
    for name, case in out["cases"].items():
        if "counts_mip" not in case:
            continue
        now, mip, change = case["metrics"], case["counts_mip"]["metrics"], case["change_vs_counts_mip"]
        rows.append([_SCALE_CASES.get(name, (name, name))[1],
                     f"{now['makespan_s']:,.0f} s vs {mip['makespan_s']:,.0f} s ({100 * change['makespan_s']:+.1f}%)",
                     f"{now['avg_jct_s']:,.0f} s vs {mip['avg_jct_s']:,.0f} s ({100 * change['avg_jct_s']:+.1f}%)",
                     f"{now['worst_ftf']:.3f} vs {mip['worst_ftf']:.3f} ({100 * change['worst_ftf']:+.1f}%)",
                     f"{_pct(now['unfair_fraction'])} vs {_pct(mip['unfair_fraction'])}"])
    return columns, rows


_PAIRED_NAMES = {"before/mlp": "before, MLP policy", "after/mlp": "after, MLP policy",
                 "after/attention": "after, attention policy"}


def _train_speed_paired(out: dict) -> tuple[list, list]:
    import statistics

    columns = ["code, policy (PPO `priority`, native, 16 clusters)", "env steps/s, each run", "median",
               "÷ before's MLP median", "rollout s / 8,192 steps (median)", "update s / 8,192 steps (median)"]
    base = out["median_env_steps_per_s"]["before/mlp"]
    rows = []
    for label, runs in out["runs"].items():
        median = out["median_env_steps_per_s"][label]
        split = {phase: statistics.median(run["wall_s_per_8192_steps"][phase] for run in runs) for phase in ("rollout", "update")}
        rows.append([_PAIRED_NAMES[label], ", ".join(f"{run['env_steps_per_s']:,.0f}" for run in runs), f"{median:,.0f}",
                     f"{median / base:.2f}×", f"{split['rollout']:.2f}", f"{split['update']:.2f}"])
    return columns, rows


def _elastic(out: dict) -> tuple[list, list]:
    columns = ["trace", "agent", "avg JCT", "makespan", "mean ρ"]
    units = {"avg_jct_s": "{:,.0f} s", "makespan_s": "{:,.0f} s", "rho_mean": "{:.3f}"}
    rows = []
    for trace, result in out["traces"].items():
        best = result["best_rigid"]
        rows.append([f"`{trace}`", "best rigid (per metric)",
                     *(units[k].format(best[k]["value"]) + f" (`{best[k]['agent']}`)" for k in out["metrics"])])
        for name, gains in result["elastic_gain_pct"].items():
            rows.append(["", f"`{name}`", *(units[k].format(result["agents"][name][k]) + f" ({gains[k]:+.1f}%)"
                                              for k in out["metrics"])])
    return columns, rows


def _learned_eval(out: dict) -> tuple[list, list]:
    columns = ["agent", "makespan", "avg JCT", "worst FTF ρ static", "unfair (ρ>1.05) static",
               "worst FTF ρ contention", "ms per round"]
    rows = [[name, f"{a['makespan_s']:,.0f} s", f"{a['avg_jct_s']:,.0f} s", f"{a['worst_ftf']:.2f}",
             _pct(a["unfair_fraction"]), f"{a['worst_ftf_themis']:.2f}", f"{a['decision_ms_per_round']:.2f}"]
            for name, a in out["agents"].items()]
    return columns, rows


#: How a saved ``output`` becomes a table, per benchmark file name.
TABLES: dict[str, Callable[[dict], tuple[list, list]]] = {
    "baselines_fidelity": _fidelity,
    "elastic": _elastic,
    "learned_eval": _learned_eval,
    "readme_training": _readme_training,
    "shockwave_machine_independence": _machine_independence,
    "shockwave_canonical": _canonical,
    "shockwave_frontier": _frontier,
    "shockwave_noise": _noise,
    "shockwave_scale": _scale,
    "shockwave_scale_metrics": _scale_metrics,
    "shockwave_variants": _variants,
    "train_speed_paired": _train_speed_paired,
}


#: Tables drawn from another benchmark's saved run: table name -> the file it reads.
DERIVED: dict[str, str] = {"shockwave_scale_metrics": "shockwave_scale"}


def source(name: str) -> str:
    """The saved run behind the table ``name``."""
    return DERIVED.get(name, name)


def load(name: str) -> dict:
    return json.loads((DATA / f"{source(name)}.json").read_text())


def table_of(name: str, record: dict) -> tuple[list, list]:
    if "output" in record:
        return TABLES[name](record["output"])
    return record["table"]["columns"], record["table"]["rows"]


def render(name: str, record: dict | None = None) -> str:
    """The generated block of ``name``: the command / date / machine line, then the table."""
    record = load(name) if record is None else record
    columns, rows = table_of(name, record)
    lines = [f"<!-- generated: {name} -->",
             f"`{record['command']}`, run {record['date']} on {record['machine']} "
             f"([data](data/benchmarks/{source(name)}.json)):", "",
             "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    lines.append(f"<!-- end generated: {name} -->")
    return "\n".join(lines)


def rewritten(text: str, only: str | None = None) -> str:
    """``text`` with every generated block (or only the block ``only``) rendered afresh."""
    return BLOCK.sub(lambda m: render(m.group("name")) if only in (None, m.group("name")) else m.group(0), text)


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU") if Path("/proc/cpuinfo").exists() else "unknown CPU"
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{os.cpu_count()} cores ({model}), {memory_gb:.0f} GB, load average {os.getloadavg()[0]:.1f} "
            "at the start (a shared machine)")


def run(name: str, args: list[str]) -> None:
    command = [".venv/bin/python", f"benchmarks/{name}.py", *args]
    where = machine()
    done = subprocess.run([sys.executable, f"benchmarks/{name}.py", *args], cwd=ROOT, check=True,
                          capture_output=True, text=True)
    output = json.loads(done.stdout)  # the script prints one JSON object (its tables go to stderr)
    record = {"command": shlex.join(command), "date": dt.date.today().isoformat(), "machine": where, "output": output}
    DATA.mkdir(parents=True, exist_ok=True)
    (DATA / f"{name}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "write", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "run":
        rest = argv[2:]
        run(argv[1], rest[1:] if rest[:1] == ["--"] else rest)
        fresh = PAGE.read_text()
        for name in (argv[1], *(table for table, origin in DERIVED.items() if origin == argv[1])):
            fresh = rewritten(fresh, name)  # the run's table and the tables derived from the same run
        PAGE.write_text(fresh)
        return 0
    text = PAGE.read_text()
    fresh = rewritten(text)
    if argv[0] == "check":
        return 0 if fresh == text else 1
    PAGE.write_text(fresh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
