"""Head-to-head evaluation harness: every agent x trace x seed, in parallel, resumable.

One module per concept:

* :mod:`~shockwave_gym.harness.grid` - user inputs -> the cell grid;
* :mod:`~shockwave_gym.harness.cells` - one cell and how to run it;
* :mod:`~shockwave_gym.harness.seeding` - which cells depend on the seed;
* :mod:`~shockwave_gym.harness.records` - a finished cell as JSON, and its table rows;
* :mod:`~shockwave_gym.harness.validate` - is a stored record whole, and this cell's;
* :mod:`~shockwave_gym.harness.backends` - process pool (default) or Ray;
* :mod:`~shockwave_gym.harness.lifeline` - pool workers die with the harness;
* :mod:`~shockwave_gym.harness.store` - the output directory, its lock, atomic writes, resume;
* :mod:`~shockwave_gym.harness.progress` - live progress;
* :mod:`~shockwave_gym.harness.summary` - the table relative to a reference agent;
* :mod:`~shockwave_gym.harness.figures` - the PNG figures;
* :mod:`~shockwave_gym.harness.api` - :func:`evaluate`, which ties them together.

Example::

    import shockwave_gym

    df = shockwave_gym.evaluate("all", "teaching-12", seeds=(0, 1), out="compare_out")
    df[["agent", "seed", "makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction"]]
"""

from __future__ import annotations

__all__ = ["CellsFailed", "HarnessWarning", "evaluate"]


def __getattr__(name: str):
    # Worker processes import this package only to reach ``cells.run_cell``; keep pandas
    # (which ``api`` needs) out of them.
    if name in __all__:
        from shockwave_gym.harness import api

        return getattr(api, name)
    raise AttributeError(f"module 'shockwave_gym.harness' has no attribute {name!r}")
