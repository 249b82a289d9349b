"""The optional ``gangs`` key of a JSON-lines trace line: an elastic job's GPU counts.

A line with ``"gangs": [1, 2, 4, 8]`` declares the job *elastic*: each round the scheduler
may run it on any one of those counts (docs/SEMANTICS.md, "Elastic jobs"). The list holds
distinct counts from 1, 2, 4, 8 and must contain the line's ``gang`` (the job's reference
count: its count when a scheduler names none, and the basis of its isolated time). Which of
the declared counts a job may really use is decided against the throughput table when it is
simulated (:func:`shockwave_gym.elastic_state.allowed_counts`). A line without the key is a
rigid job, as before. The TSV format has no place for the key; writing an elastic trace as
TSV is an error.
"""

from __future__ import annotations

from typing import Any

from shockwave_gym.jobs import GANG_SIZES

#: The key, as JSON-lines traces spell it.
GANGS_KEY = "gangs"


def parse_gangs(values: dict[str, Any], gang: Any) -> tuple[tuple[int, ...], list[tuple[str, str]]]:
    """``(declared counts ascending, problems)`` of ``values``' ``gangs`` key: ``()`` when
    absent (a rigid job); problems as ``(key, message)`` pairs."""
    if GANGS_KEY not in values:
        return (), []
    raw = values[GANGS_KEY]
    sizes = ", ".join(map(str, GANG_SIZES))
    if not isinstance(raw, list) or not raw:
        return (), [(GANGS_KEY, f"must be a non-empty JSON list of GPU counts from {sizes}, got {raw!r}")]
    bad = [v for v in raw if isinstance(v, bool) or not isinstance(v, int) or v not in GANG_SIZES]
    if bad:
        return (), [(GANGS_KEY, f"every count must be one of {sizes}, got {bad[0]!r}")]
    if len(set(raw)) != len(raw):
        return (), [(GANGS_KEY, f"counts must be distinct, got {raw!r}")]
    if gang not in raw:
        return (), [(GANGS_KEY, f"must contain the job's gang {gang!r} (its reference count), got {raw!r}")]
    return tuple(sorted(raw)), []
