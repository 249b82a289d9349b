"""``shockwave-gym`` command line: one module per group of subcommands.

Each command module exposes ``add_parsers(subparsers)``, which adds its subcommands and sets
``func(args) -> int`` on each. Exit codes (:mod:`shockwave_gym.cli.guard`): 0 success, 2 invalid input
(a trace, throughput, output path or argument error, reported on one stderr line as
``file:line:field: message`` or naming the flag), 1 a bug (with its traceback), 130
interrupted. ``SHOCKWAVE_GYM_DEBUG=1`` shows the traceback of input errors too.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: Command modules, imported lazily so that ``shockwave-gym run`` never pays for torch.
COMMAND_MODULES = (
    "shockwave_gym.cli.run_command",
    "shockwave_gym.cli.trace_commands",
    "shockwave_gym.cli.import_command",
    "shockwave_gym.cli.compare_command",
    "shockwave_gym.cli.train_command",
    "shockwave_gym.cli.course_command",
    "shockwave_gym.cli.leaderboard_command",
)


def build_parser() -> argparse.ArgumentParser:
    from shockwave_gym._version import __version__
    from shockwave_gym.cli.guard import PROG, OneLineParser

    parser = OneLineParser(
        prog=PROG,
        description="GPU-cluster scheduling environment and agents (after Shockwave, NSDI '23).",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:  # that command group is not part of this install
                continue
            raise
        module.add_parsers(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the subcommand under :mod:`shockwave_gym.cli.guard`'s policy."""
    from shockwave_gym.cli.guard import run_guarded

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a bad flag (already reported on one line)
        return exc.code if isinstance(exc.code, int) else 2
    return run_guarded(args.func, args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
