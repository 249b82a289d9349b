"""Regenerate the README figures: a head-to-head of every available agent on a bundled trace.

    .venv/bin/python scripts/make_readme_figures.py            # writes docs/img/*.png

Runs :func:`shockwave_gym.evaluate` (the same harness as ``make demo``) and copies its
figures into ``docs/img/`` as ``compare_<figure>.png``, plus ``docs/img/compare_summary.md``
(the table and the command). ``--work DIR`` keeps the harness output there, so that an interrupted run
resumes instead of starting over. Prints the Markdown that embeds the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from shockwave_gym.harness import evaluate
from shockwave_gym.harness.figures import FIGURE_FILES

REPO = Path(__file__).resolve().parents[1]
#: docs/img is shared with other figure scripts: ours carry this prefix.
PREFIX = "compare_"
CAPTIONS = {
    "relative_bars.png": "Makespan, average JCT, worst FTF and unfair fraction relative to the reference agent",
    "ftf_cdf.png": "Finish-time fairness (ρ) CDF per agent",
    "jct_cdf.png": "Job completion time CDF per agent",
    "utilization.png": "Cluster utilization over time",
    "gantt.png": "Gantt chart of the reference agent's schedule",
}


def copy_atomic(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(source, temporary)
    os.replace(temporary, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default="canonical-analogue-120", help="bundled trace (default canonical-analogue-120)")
    parser.add_argument("--agents", default="all", help="agents (default: all available)")
    parser.add_argument("--reference", default="shockwave", help="reference agent (default shockwave)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default 2)")
    parser.add_argument("--img-dir", type=Path, default=REPO / "docs" / "img", help="where the PNGs go (default docs/img)")
    parser.add_argument("--work", type=Path, default=None, help="keep the harness output here (resumable)")
    args = parser.parse_args(argv)

    # The command that regenerates the figures: only the options that change them.
    command = "python scripts/make_readme_figures.py"
    for option in ("trace", "agents", "reference"):
        if getattr(args, option) != parser.get_default(option):
            command += f" --{option} {getattr(args, option)}"
    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or Path(scratch)
        results = evaluate(args.agents, args.trace, seeds=(0,), workers=args.workers, out=work,
                           reference=args.reference, command=command)
        figures = work / "figures" / args.trace
        for name in FIGURE_FILES:
            copy_atomic(figures / name, args.img_dir / f"{PREFIX}{name}")
        copy_atomic(work / "summary.md", args.img_dir / f"{PREFIX}summary.md")
    reference = results.attrs["reference"]
    print(f"wrote {len(FIGURE_FILES)} figures and {PREFIX}summary.md to {args.img_dir} "
          f"({len(results)} agents on {args.trace}, relative to {reference})")
    print("\nMarkdown for the README:\n")
    relative = os.path.relpath(args.img_dir, REPO)
    for name in FIGURE_FILES:
        print(f"![{CAPTIONS[name]}]({relative}/{PREFIX}{name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
