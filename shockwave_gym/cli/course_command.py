"""``shockwave-gym course build`` and ``shockwave-gym course grade``: the teaching kit."""

from __future__ import annotations

import argparse
import json
import sys

from shockwave_gym.cli.guard import PROG, check_output_dir, one_line


def add_parsers(subparsers) -> None:
    course = subparsers.add_parser("course", help="build the course's student/instructor notebooks; grade a lab")
    commands = course.add_subparsers(dest="course_command", metavar="ACTION", required=True)
    build = commands.add_parser("build", help="write OUT/student (no solutions) and OUT/instructor")
    build.add_argument("--out", required=True, help="output directory")
    build.add_argument("--source", default="notebooks/course",
                       help="the source notebooks and instructor.json (default: notebooks/course)")
    build.set_defaults(func=run_build)
    grade = commands.add_parser("grade", help="grade a submission (.py, or a lab notebook with graded cells)")
    grade.add_argument("lab", metavar="LAB", help="lab number or key: 1/adaptation, 2/fairness, 3/markets")
    grade.add_argument("submissions", metavar="SUBMISSION", nargs="+",
                       help="students' .py files or .ipynb notebooks (several: each is graded)")
    grade.add_argument("--kit", default=None,
                       help="instructor kit (with instructor.json): adds the instructor-only cases")
    grade.add_argument("--json", action="store_true", help="print each report as one line of JSON")
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

    check_output_dir(args.out, "--out")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name or 'kit'}.build-", dir=out.parent if str(out.parent) else "."))
    try:
        try:
            report = build_kit(args.source, staging)
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


def run_grade(args: argparse.Namespace) -> int:
    """Grade every submission; one that cannot be run gets one stderr line and the others
    are still graded (exit 2 if any could not be). A bad LAB or --kit stops at once."""
    from shockwave_gym.course import get_lab, grade_submission
    from shockwave_gym.course.kit import hidden_seeds
    from shockwave_gym.course.submission import SubmissionError

    lab = get_lab(args.lab)
    if args.kit is not None:
        hidden_seeds(args.kit, lab.key)  # a bad kit is reported before any submission runs
    status = 0
    for path in args.submissions:
        try:
            report = grade_submission(lab.key, path, kit=args.kit)
        except SubmissionError as exc:
            print(f"{PROG}: error: {one_line(str(exc))}", file=sys.stderr)
            status = 2
            continue
        print(json.dumps(report.to_dict()) if args.json else report.text() + "\n", flush=True)
    return status
