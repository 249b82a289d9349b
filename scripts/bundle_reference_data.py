"""Maintainers' tool: rebuild the bundled copies of the Shockwave authors' data.

    .venv/bin/python scripts/bundle_reference_data.py [--shared ../shared] [--check]

The project bundles, in its own formats, the data the authors published with their MIT-licensed
repository (their copyright line is in NOTICE). This script rewrites every bundled copy from the
maintainers' reference folder (``../shared/reference`` beside the checkout by default):

* ``traces/authors-canonical-120.trace``: their canonical 120-job trace, bytes unchanged (TSV);
* ``shockwave_gym/data/{k80,p100,v100}_throughputs.csv``: the isolated rate of every
  (model, batch size, gang) per GPU type, from their Gavel-format throughput file;
* ``shockwave_gym/data/gns_schedules.json``: GNS batch-size change points;
* ``shockwave_gym/data/authors_canonical_results.json``: their simulator's figures per policy
  on the canonical trace (read by :mod:`shockwave_gym.reference`), plus the wall times
  measured by running their code (``measured_wall``), which no file in ``../shared`` holds.

Nothing at run time or in the tests reads ``../shared``: users clone the project without it.
``--check`` compares instead of writing and exits 1 when a bundled file differs. Every output
is deterministic, so running the script twice changes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from shockwave_gym.throughput import BUILTIN_GPU_TYPES, ThroughputTable

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "shockwave_gym" / "data"

#: The authors' policy keys -> our agent names.
AGENT_FOR_AUTHORS_KEY = {
    "max_min_fairness": "gavel",
    "finish_time_fairness": "themis",
    "allox": "allox",
    "min_total_duration": "ossp",
    "max_sum_throughput_perf": "mst",
    "gandiva_fair": "gandiva_fair",
    "shockwave": "shockwave",
}

#: Wall times measured by running the authors' code on this project's machines (2 cores).
#: They are fixed figures: their code cannot run in our test or benchmark environment.
MEASURED_WALL = {
    "baseline_per_trace_s": {
        "wall_s": 5.0,
        "provenance": "the authors' simulator (uw-mad-dash/shockwave) replaying one Gavel-family "
        "baseline on their canonical trace, 32 GPUs, on the project's 2-core machines: "
        "about 5 s wall per baseline per trace",
    },
    "shockwave_highs_s": {
        "wall_s": 479.0,
        "provenance": "the authors' Shockwave (their code, Gurobi swapped for HiGHS, 1e-3 relative "
        "gap, 15 s limit) on their canonical trace, 32 GPUs, on the project's 2-core machines: "
        "479 s wall for the whole run",
    },
}

GNS_ABOUT = (
    "GNS batch-size change points [epoch (0-based), new batch size] by model|initial batch "
    "size|gang. Figures carried over from the Shockwave authors' simulator rules (MIT licence); "
    "see NOTICE. Combinations not listed never change."
)


def throughput_csv(table: ThroughputTable, gpu_type: str) -> str:
    lines = [
        f"# Isolated {gpu_type.upper()} throughput in iterations/s for the whole gang, by model, "
        "batch size and gang size.",
        "# Figures measured by the Shockwave/Gavel authors (MIT licence); see NOTICE. 0 = cannot run.",
        "model,batch_size,gang,iterations_per_s",
    ]
    lines += [f"{model},{batch},{gang},{rate!r}" for (model, batch, gang), rate in table.items()]
    return "\n".join(lines) + "\n"


def _dump(value, indent: int = 0) -> str:
    """JSON with one key per line for objects and every list on a single line."""
    if isinstance(value, dict):
        pad = " " * (indent + 1)
        items = [f"{pad}{json.dumps(key)}: {_dump(item, indent + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def reference_json(raw: dict) -> str:
    policies = {}
    for authors_key, agent in AGENT_FOR_AUTHORS_KEY.items():
        policy = raw["policies"][authors_key]
        jct, ftf = policy["jct_list_s"], policy["ftf_list"]
        if len(jct) != len(ftf) or not all(math.isfinite(x) for x in (*jct, *ftf)):
            raise SystemExit(f"{authors_key}: per-job lists are damaged in the source file")
        policies[agent] = {
            "authors_key": authors_key,
            "legend": policy["legend"],
            "makespan_s": policy["makespan_s"],
            "avg_jct_s": policy["avg_jct_s"],
            "geomean_jct_s": policy["geometric_mean_jct_s"],
            "worst_ftf": policy["worst_ftf"],
            "unfair_fraction": round(policy["unfair_fraction_pct"] / 100.0, 6),
            "utilization": policy["cluster_util"],
            "jct_s": jct,
            "ftf": ftf,
        }
    document = {
        "format": "shockwave-gym authors-reference 1",
        "about": "The Shockwave authors' simulator results on their canonical trace, one entry per "
        "policy under our agent name. Per-job lists are in trace-file order, which is also our "
        "job-id order (the trace's arrivals are sorted). ftf is their static-contention "
        "finish-time fairness; unfair_fraction is the share of jobs with ftf > 1.05 (0 to 1); "
        "utilization is useful GPU-seconds over GPUs x makespan. Rebuilt by "
        "scripts/bundle_reference_data.py; read with shockwave_gym.reference.",
        "source": "result files of the authors' simulator (github.com/uw-mad-dash/shockwave, MIT "
        "licence; see NOTICE) for the NSDI '23 canonical experiment",
        "trace": "authors-canonical-120",
        "gpus": 32,
        "gpu_type": "v100",
        "round_s": 120.0,
        "policies": policies,
        "measured_wall": MEASURED_WALL,
    }
    return _dump(document) + "\n"


def outputs(reference: Path) -> dict[Path, bytes]:
    """Every bundled file and the bytes it must hold."""
    files = {ROOT / "traces" / "authors-canonical-120.trace": (reference / "canonical_120jobs.trace").read_bytes()}
    gavel_json = reference / "v100_throughputs.json"
    for gpu_type in BUILTIN_GPU_TYPES:
        table = ThroughputTable.from_gavel_json(gavel_json, worker_type=gpu_type)
        files[DATA / f"{gpu_type}_throughputs.csv"] = throughput_csv(table, gpu_type).encode()
    gns = json.loads((reference / "gns_batch_size_schedule.json").read_text(encoding="utf-8"))
    gns_doc = {"_about": GNS_ABOUT, "schedules": dict(sorted(gns["schedules"].items()))}
    files[DATA / "gns_schedules.json"] = json.dumps(gns_doc, indent=0).encode()
    raw = json.loads((reference / "authors_canonical_results.json").read_text(encoding="utf-8"))
    files[DATA / "authors_canonical_results.json"] = reference_json(raw).encode()
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared",
                        help="the maintainers' shared folder (default: ../shared beside the checkout)")
    parser.add_argument("--check", action="store_true", help="compare, do not write; exit 1 on a difference")
    args = parser.parse_args(argv)
    reference = args.shared / "reference"
    if not reference.is_dir():
        print(f"{reference}: no such directory (this tool needs the maintainers' reference files)",
              file=sys.stderr)
        return 2
    differ = 0
    for path, data in outputs(reference).items():
        same = path.is_file() and path.read_bytes() == data
        if args.check:
            differ += not same
            print(f"{'same' if same else 'DIFFERS'}  {path.relative_to(ROOT)}")
        elif not same:
            path.write_bytes(data)
            print(f"wrote {path.relative_to(ROOT)}")
        else:
            print(f"unchanged {path.relative_to(ROOT)}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
