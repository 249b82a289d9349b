"""The README's training command, run twice: its validation figure and whether the runs agree.

Run as ``.venv/bin/python benchmarks/readme_training.py [--runs 2] [--timesteps 20000]``. Each run
is ``shockwave-gym train --timesteps 20000 --out DIR`` (the README's command) into its own fresh
folder. Prints one JSON object: per run the validation checkpoint the command writes (its step,
its jct score = mean per-trace avg-JCT ratio to FIFO on the validation traces, its avg JCT and
FIFO's), the last weights' score, the wall time (machine-dependent, so not a documented figure),
and ``policies_identical``: whether every run wrote the same ``policy.npz`` byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def train(folder: Path, timesteps: int) -> dict:
    script = Path(sys.executable).parent / "shockwave-gym"
    subprocess.run([str(script), "train", "--timesteps", str(timesteps), "--out", str(folder)],
                   check=True, capture_output=True, text=True)
    record = json.loads((folder / "eval.json").read_text())
    selected, final, fifo = record["selected"], record["final"], record["fifo"]
    return {
        "selected_timesteps": selected["timesteps"],
        "selected_score": round(selected["score"], 4),
        "selected_avg_jct_s": round(selected["avg_jct_s"], 1),
        "fifo_avg_jct_s": round(fifo["avg_jct_s"], 1),
        "avg_jct_ratio_to_fifo": round(selected["avg_jct_s"] / fifo["avg_jct_s"], 4),
        "final_score": round(final["score"], 4),
        "validation_traces": len(record["eval_traces"]),
        "policy_sha256": hashlib.sha256((folder / "policy.npz").read_bytes()).hexdigest()[:16],
        "wall_s": round(record["wall_s"], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--timesteps", type=int, default=20000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        runs = [train(Path(tmp) / f"run{i}", args.timesteps) for i in range(args.runs)]
    identical = len({run["policy_sha256"] for run in runs}) == 1
    print(json.dumps({"benchmark": "readme_training",
                      "command": f"shockwave-gym train --timesteps {args.timesteps} --out runs/ppo",
                      "runs": runs, "policies_identical": identical}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
