"""The exact counts solver against HiGHS, program by program, on the same counts programs.

Run as ``.venv/bin/python benchmarks/exact_counts.py``. The ``shockwave`` agent plays a trace
with ``counts_method=mip`` (so the trajectory is HiGHS's, as before the exact solver); at each
homogeneous counts program with at least ``--min-jobs`` jobs the exact solver
(agents/shockwave/exact_counts.py) solves the same program as well, and both are timed. The
run stops after ``--programs`` such programs. Objectives are the program's own (normalised
coefficients, unscaled), so they compare directly; "better" / "worse" mean by more than the
program's absolute gap.

``--agent shockwave-normalized`` (or ``shockwave-fair``) compares under that variant's
configuration. Default trace: the generated 2,000-job trace of benchmarks/shockwave_scale.py on 512 GPUs
(``--trace scale-900 --gpus 256`` for the bundled one). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shockwave_scale import GENERATE_2000, cli  # noqa: E402

from shockwave_agents.shockwave.agent import ShockwaveAgent  # noqa: E402
from shockwave_agents.shockwave.config import ShockwaveConfig  # noqa: E402
from shockwave_agents.shockwave.exact_counts import exact_counts_applies, solve_counts_exactly  # noqa: E402
from shockwave_agents.shockwave.planner import Planner  # noqa: E402
from shockwave_gym.config import SimConfig  # noqa: E402
from shockwave_gym.runner import run_episode  # noqa: E402
from shockwave_gym.traces import load_trace  # noqa: E402


class _Enough(Exception):
    pass


class ComparingPlanner(Planner):
    """HiGHS decides (``counts_method=mip``); the exact solver is run beside it and recorded."""

    def __init__(self, config, backend, min_jobs: int, limit: int):
        super().__init__(config, backend)
        self.min_jobs, self.limit, self.rows = min_jobs, limit, []

    def _run_counts(self, instance, program, start, record):
        result = super()._run_counts(instance, program, start, record)
        if instance.num_jobs >= self.min_jobs and exact_counts_applies(instance, program):
            exact = solve_counts_exactly(instance, program)
            gap = program.abs_gap * program.objective_unit
            self.rows.append({
                "jobs": instance.num_jobs,
                "highs": {"status": result.status.value, "s": result.solve_s, "objective": result.objective,
                          "bound": result.bound},
                "exact": {"status": exact.status.value, "s": exact.solve_s, "objective": exact.objective,
                          "bound": exact.bound, "levels": exact.message},
                "abs_gap": gap,
            })
            if len(self.rows) >= self.limit:
                raise _Enough
        return result


VARIANTS = {"shockwave": ShockwaveConfig, "shockwave-normalized": ShockwaveConfig.normalized,
            "shockwave-fair": ShockwaveConfig.fair}


class ComparingAgent(ShockwaveAgent):
    def __init__(self, min_jobs: int, limit: int, variant: str = "shockwave"):
        super().__init__(VARIANTS[variant](counts_method="mip"))
        self.min_jobs, self.limit = min_jobs, limit

    def reset(self, view, seed=None):
        super().reset(view, seed)
        self.planner = ComparingPlanner(self.planner.config, self.planner.backend, self.min_jobs, self.limit)


def summarise(rows: list[dict]) -> dict:
    both = [r for r in rows if r["highs"]["objective"] is not None and r["exact"]["objective"] is not None]
    diffs = [(r["exact"]["objective"] - r["highs"]["objective"], r["abs_gap"], abs(r["highs"]["objective"])) for r in both]
    highs_s = sum(r["highs"]["s"] for r in rows)
    exact_s = sum(r["exact"]["s"] for r in rows)
    return {
        "programs": len(rows),
        "highs_s": highs_s,
        "exact_s": exact_s,
        "speedup_highs_over_exact": highs_s / exact_s if exact_s > 0 else None,
        "highs_statuses": sorted({r["highs"]["status"] for r in rows}),
        "exact_statuses": sorted({r["exact"]["status"] for r in rows}),
        "exact_better": sum(d > g for d, g, _ in diffs),
        "within_gap": sum(abs(d) <= g for d, g, _ in diffs),
        "exact_worse": sum(d < -g for d, g, _ in diffs),
        "largest_improvement_share_of_objective": max((d / s for d, _, s in diffs if s > 0), default=0.0),
        "largest_shortfall_share_of_objective": max((-d / s for d, _, s in diffs if s > 0), default=0.0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=None, help="trace name or path (default: the generated 2,000-job trace)")
    parser.add_argument("--gpus", type=int, default=512)
    parser.add_argument("--programs", type=int, default=40, help="stop after this many compared programs")
    parser.add_argument("--min-jobs", type=int, default=200)
    parser.add_argument("--agent", default="shockwave", choices=sorted(VARIANTS), help="the planner's configuration")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trace_arg = args.trace
        if trace_arg is None:
            trace_arg = str(Path(tmp) / "scale-2000.jsonl")
            subprocess.run([cli(), *GENERATE_2000, "--out", trace_arg], check=True, capture_output=True)
        trace = load_trace(trace_arg)
        agent = ComparingAgent(args.min_jobs, args.programs, args.agent)
        start = time.perf_counter()
        try:
            run_episode(trace, agent, SimConfig(gpus=args.gpus), progress=False)
        except _Enough:
            pass
    rows = agent.planner.rows
    print(json.dumps({"benchmark": "exact_counts", "agent": args.agent, "trace": args.trace or "generated scale-2000", "gpus": args.gpus,
                      "min_jobs": args.min_jobs, "wall_s": time.perf_counter() - start,
                      "summary": summarise(rows), "programs": rows}, allow_nan=False, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
