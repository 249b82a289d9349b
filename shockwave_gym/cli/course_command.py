"""``shockwave-gym course build`` and ``shockwave-gym course grade``: the teaching kit."""

from __future__ import annotations

import argparse
import json
import sys

from shockwave_gym.cli.guard import PROG, check_output_dir, one_line
from shockwave_gym.course.isolation import MAX_MEMORY_MB, MAX_WALL_S


def _positive(kind, most):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if not 0 < value <= most:  # NaN fails both
            raise argparse.ArgumentTypeError(f"expected a positive number <= {kind(most)}, got {text!r}")
        return value
    return parse


def add_parsers(subparsers) -> None:
    course = subparsers.add_parser("course", help="build the course's student/instructor notebooks; grade a lab")
    commands = course.add_subparsers(dest="course_command", metavar="ACTION", required=True)
    build = commands.add_parser("build", help="write OUT/student (no solutions) and OUT/instructor")
    build.add_argument("--out", required=True, help="output directory")
    build.add_argument("--source", default=None,
                       help="the source notebooks and instructor.json (default: the ones installed with the package)")
    build.set_defaults(func=run_build)
    grade = commands.add_parser("grade", help="grade submissions (.py, or lab notebooks with graded cells), "
                                              "each in its own process with limits")
    grade.add_argument("lab", metavar="LAB", help="lab number or key: 1/adaptation, 2/fairness, 3/markets")
    grade.add_argument("submissions", metavar="SUBMISSION", nargs="+",
                       help="students' .py files or .ipynb notebooks (several: each is graded)")
    grade.add_argument("--kit", default=None,
                       help="instructor kit (with instructor.json): adds the instructor-only cases")
    grade.add_argument("--json", action="store_true", help="print each submission's grade as one line of JSON")
    grade.add_argument("--time-limit", type=_positive(float, MAX_WALL_S), default=120.0, metavar="S",
                       help="wall-clock (and CPU) seconds per submission (default 120)")
    grade.add_argument("--memory-limit", type=_positive(int, MAX_MEMORY_MB), default=2048, metavar="MB",
                       help="address space per submission in MB (default 2048)")
    grade.set_defaults(func=run_grade)


def run_build(args: argparse.Namespace) -> int:
    """Build the kit in a temporary directory beside ``--out``, then move each file into
    place with ``os.replace``: a full disk leaves no half-written notebook under ``--out``,
    and is reported on one line (exit 2)."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from shockwave_gym.course import build_kit
    from shockwave_gym.course.build import default_source

    check_output_dir(args.out, "--out")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name or 'kit'}.build-", dir=out.parent if str(out.parent) else "."))
    try:
        try:
            report = build_kit(args.source if args.source is not None else default_source(), staging)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write: {exc.strerror or exc}", str(out)) from None
        written = []
        for path in report.written:
            final = out / path.relative_to(staging)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, final)
            written.append(final)
        report.out, report.written = out, written
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(report.text())
    return 0


def _shown(output: str) -> str:
    lines = output.rstrip("\n").splitlines()
    return "\n".join(["output of the submission (shown, not graded):"] + [f"  | {line}" for line in lines])


def run_grade(args: argparse.Namespace) -> int:
    """Grade every submission, each in its own child process; one that cannot be graded
    gets one stderr line and the others are still graded (exit 2 if any could not be).
    A bad LAB or --kit stops at once."""
    from shockwave_gym.course import get_lab
    from shockwave_gym.course.grade import grade_isolated
    from shockwave_gym.course.isolation import Limits
    from shockwave_gym.course.kit import hidden_seeds

    lab = get_lab(args.lab)
    if args.kit is not None:
        hidden_seeds(args.kit, lab.key)  # a bad kit is reported before any submission runs
    limits = Limits(wall_s=args.time_limit, memory_mb=args.memory_limit)
    status = 0
    for path in args.submissions:
        outcome = grade_isolated(lab.key, path, kit=args.kit, limits=limits)
        if outcome.failure is not None:
            print(f"{PROG}: error: {one_line(outcome.failure)}", file=sys.stderr, flush=True)
            status = 2
        if args.json:
            print(json.dumps(outcome.to_dict(lab)), flush=True)
            continue
        blocks = [outcome.report.text()] if outcome.report is not None else []
        if outcome.output.strip():
            blocks.append(_shown(outcome.output) if blocks else f"{path}\n" + _shown(outcome.output))
        if blocks:
            print("\n".join(blocks) + "\n", flush=True)
    return status
