"""``shockwave-gym`` command line: one module per group of subcommands.

Each command module exposes ``add_parsers(subparsers)``, which adds its subcommands and sets
``func(args) -> int`` on each. Exit codes: 0 success, 2 invalid input (a trace, throughput
or argument error, reported as ``file:line:field: message``), 1 anything else.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: Command modules, imported lazily so that ``shockwave-gym run`` never pays for torch.
COMMAND_MODULES = (
    "shockwave_gym.cli.run_command",
    "shockwave_gym.cli.trace_commands",
    "shockwave_gym.cli.compare_command",
    "shockwave_gym.cli.train_command",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shockwave-gym",
        description="GPU-cluster scheduling environment and agents (after Shockwave, NSDI '23).",
    )
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
    from shockwave_gym.errors import InputError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"shockwave-gym: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("shockwave-gym: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
