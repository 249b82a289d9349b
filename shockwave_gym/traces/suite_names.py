"""Suite traces by name: ``<suite>-<split>-<index>`` (a fixed validation or test trace, as
SUITES.md and LEADERBOARD.md list them) and ``<suite>-train-s<seed>`` (a training trace)
are accepted wherever a trace name is, like a bundled name: :func:`load_trace` generates the
trace and :func:`~.bundled.resolve_gpus` / :func:`~.bundled.resolve_cluster` give the suite's
cluster. A file of the same name in the working directory takes precedence.
"""

from __future__ import annotations

import re

from shockwave_gym.errors import InputError
from shockwave_gym.traces.named import register_suite_names
from shockwave_gym.traces.suites import (
    SEED_RANGES,
    entry_trace,
    get_suite,
    split_entries,
    suite_names,
)

_FIXED = re.compile(r"(?P<suite>[a-z0-9-]+?)-(?P<split>test|validation)-(?P<index>[0-9]+)", re.ASCII)
_TRAIN = re.compile(r"(?P<suite>[a-z0-9-]+?)-train-s(?P<seed>[0-9]+)", re.ASCII)


def suite_of_trace_name(name: str):
    """The :class:`~.suites.Suite` whose trace is called ``name``, or ``None`` when ``name``
    does not name a suite trace. A well-formed name of a known suite past the split's end
    raises :class:`~shockwave_gym.errors.InputError` listing the split's names."""
    found = _lookup(name)
    return None if found is None else found[0]


def suite_trace_by_name(name: str):
    """The generated trace called ``name`` (see the module), or ``None``."""
    found = _lookup(name)
    if found is None:
        return None
    suite, split, key = found
    if split == "train":
        return suite.trace("train", key)
    return entry_trace(key)


def suite_regime_of_trace_name(name: str):
    """The information regime a suite trace called ``name`` runs in
    (:attr:`~.suites.SplitEntry.regime`, :func:`~.suites.suite_regime` for a train seed);
    ``None`` for the paper's setting, for a name that is not a suite trace, and when a file
    of that name in the working directory takes precedence."""
    from pathlib import Path

    from shockwave_gym.traces.suites import suite_regime

    if not isinstance(name, str) or Path(name).is_file():
        return None
    found = _lookup(name)
    if found is None:
        return None
    suite, split, key = found
    return suite_regime(suite, key) if split == "train" else key.regime


def _lookup(name: str):
    """(suite, split, entry or train seed) for a suite trace name, else ``None``."""
    if not isinstance(name, str):
        return None
    fixed, train = _FIXED.fullmatch(name), _TRAIN.fullmatch(name)
    match = fixed or train
    if match is None or match["suite"] not in suite_names():
        return None
    suite = get_suite(match["suite"])
    if train is not None:
        lo, hi = SEED_RANGES["train"]
        seed = int(train["seed"])
        if not lo <= seed < hi:
            raise InputError(f"trace {name!r}: suite {suite.name}'s train seeds lie in [{lo}, {hi})")
        return suite, "train", seed
    entries = split_entries([suite.name], fixed["split"])
    for entry in entries:
        if entry.trace_name == name:
            return suite, entry.split, entry
    raise InputError(f"trace {name!r}: suite {suite.name}'s {fixed['split']} split has the traces "
                     f"{', '.join(e.trace_name for e in entries)}")


register_suite_names(suite_trace_by_name, suite_of_trace_name)
