"""The environment's spec page (``docs/ENV.md``), generated from :class:`ClusterEnv`'s docstring.

The docstring is the single source; a test fails when ``docs/ENV.md`` is stale. Regenerate
it from the repository root with::

    python -m shockwave_gym.env.docs docs/ENV.md
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from shockwave_gym.env.cluster_env import ClusterEnv

HEADER = (
    "# `ClusterEnv`: the shockwave-gym environment\n\n"
    "<!-- Generated from the ClusterEnv docstring by `python -m shockwave_gym.env.docs docs/ENV.md`;"
    " do not edit by hand. -->\n\n"
)


def env_spec_markdown() -> str:
    """The Markdown page: a header, then the docstring with its ``##`` sections."""
    return HEADER + inspect.cleandoc(ClusterEnv.__doc__) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = env_spec_markdown()
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
