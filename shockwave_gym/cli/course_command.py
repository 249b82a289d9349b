"""``shockwave-gym course build`` and ``shockwave-gym course grade``: the teaching kit."""

from __future__ import annotations

import argparse
import json

from shockwave_gym.cli.guard import check_output_dir


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
    grade.add_argument("submission", metavar="SUBMISSION", help="the student's .py file or .ipynb notebook")
    grade.add_argument("--kit", default=None,
                       help="instructor kit (with instructor.json): adds the instructor-only cases")
    grade.add_argument("--json", action="store_true", help="print the report as JSON")
    grade.set_defaults(func=run_grade)


def run_build(args: argparse.Namespace) -> int:
    from shockwave_gym.course import build_kit

    check_output_dir(args.out, "--out")
    print(build_kit(args.source, args.out).text())
    return 0


def run_grade(args: argparse.Namespace) -> int:
    from shockwave_gym.course import grade_submission

    report = grade_submission(args.lab, args.submission, kit=args.kit)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.text())
    return 0
