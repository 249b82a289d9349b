"""Is a stored cell record whole, and is it the record of this cell?

A resumed run trusts a record only if this says so. Anything else (a hand-edited file, a file
copied from another cell, a disk that lost its tail) is recomputed, and the caller warns with
the problem found here. The checks follow what :func:`~.records.make_record` writes and what
the tables and figures read back.
"""

from __future__ import annotations

import json
import math

from shockwave_gym.harness.cell_schema import range_problem, seal_problem
from shockwave_gym.harness.cells import Cell

_NUMBER = "number"
_OPTIONAL_NUMBER = "number or null"

#: Fields of a record's ``row``, with the type each must have.
ROW_FIELDS: dict[str, object] = {
    "trace": str,
    "agent": str,
    "seed": int,
    "gpus": int,
    "num_jobs": int,
    "completed_jobs": int,
    "truncated": bool,
    "makespan_s": _OPTIONAL_NUMBER,
    "rho_mean": _OPTIONAL_NUMBER,
    "rho_p95": _OPTIONAL_NUMBER,
    "rho_max": _OPTIONAL_NUMBER,
    "rho_over_1_05": _OPTIONAL_NUMBER,
    "rho_over_1_25": _OPTIONAL_NUMBER,
    "gang_ftf_mean": _OPTIONAL_NUMBER,
    "gang_ftf_p95": _OPTIONAL_NUMBER,
    "gang_ftf_max": _OPTIONAL_NUMBER,
    "gang_ftf_over_1_05": _OPTIONAL_NUMBER,
    "avg_jct_s": _OPTIONAL_NUMBER,
    "geomean_jct_s": _OPTIONAL_NUMBER,
    "median_jct_s": _OPTIONAL_NUMBER,
    "worst_ftf": _OPTIONAL_NUMBER,
    "unfair_fraction": _OPTIONAL_NUMBER,
    "worst_ftf_themis": _OPTIONAL_NUMBER,
    "unfair_fraction_themis": _OPTIONAL_NUMBER,
    "utilization": _OPTIONAL_NUMBER,
    "busy_utilization": _OPTIONAL_NUMBER,
    "restart_overhead_gpu_s": _NUMBER,
    "rounds": int,
    "avg_jct_admission_s": _OPTIONAL_NUMBER,
    "median_jct_admission_s": _OPTIONAL_NUMBER,
    "worst_ftf_admission": _OPTIONAL_NUMBER,
    "unfair_fraction_admission": _OPTIONAL_NUMBER,
    "wall_s": _NUMBER,
    "episode_wall_s": _NUMBER,
    "decision_wall_s": _NUMBER,
    "agent_stats": str,
    "key_hash": str,
}

#: Metric keys a record saved before they existed lacks: such a record is recomputed, with a
#: warning naming the key.
ADDED_METRICS = ("rho_mean", "rho_p95", "rho_max", "rho_over_1_05", "rho_over_1_25",
                 "gang_ftf_mean", "gang_ftf_p95", "gang_ftf_max", "gang_ftf_over_1_05")

#: Per-job lists of a record's ``result`` (one entry per job of the trace).
_JOB_LISTS = ("arrival_s", "completion_s", "isolated_time_s", "gang", "run_time_s")
#: Per-round lists (one entry per round).
_ROUND_LISTS = ("round_start_s", "round_end_s", "round_gpus_busy", "round_job_ids",
                "round_run_s", "round_overhead_s")


def _type_problem(value: object, expected: object) -> str | None:
    """``None`` when ``value`` has the ``expected`` type, else what was expected."""
    if expected is bool:
        ok = isinstance(value, bool)
    elif expected is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif expected is str:
        ok = isinstance(value, str)
    else:
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        ok = number or (expected == _OPTIONAL_NUMBER and value is None)
    if ok:
        return None
    name = expected if isinstance(expected, str) else {bool: "true/false", int: "an integer", str: "a string"}[expected]
    return f"expected {name}, got {json.dumps(value)[:40]}"


def _row_problem(row: object, cell: Cell) -> str | None:
    if not isinstance(row, dict):
        return "'row' is not an object"
    for name, expected in ROW_FIELDS.items():
        if name not in row:
            if name in ADDED_METRICS:
                return f"row field {name!r} is missing (saved before the fair-share metrics were added)"
            return f"row field {name!r} is missing"
        problem = _type_problem(row[name], expected)
        if problem:
            return f"row field {name!r}: {problem}"
    expected_ids = {"trace": cell.trace.name, "agent": cell.agent.label, "seed": cell.seed,
                    "gpus": cell.gpus, "key_hash": cell.key_hash}
    for name, value in expected_ids.items():
        if row[name] != value:
            return f"row field {name!r} is {row[name]!r}, this cell's is {value!r}"
    return None


def _numbers(values: object, *, integers: bool = False) -> bool:
    """A list of numbers (integers only, if asked); ``null`` stands for NaN in float lists."""
    if not isinstance(values, list):
        return False
    for value in values:
        if value is None and not integers:
            continue
        if isinstance(value, bool) or not isinstance(value, int if integers else int | float):
            return False
    return True


def _result_problem(result: object, cell: Cell) -> str | None:
    if not isinstance(result, dict):
        return "'result' is not an object"
    for name in ("trace_name", "gpus", "round_s", "end_time_s", *_JOB_LISTS, *_ROUND_LISTS):
        if name not in result:
            return f"result field {name!r} is missing"
    if result["trace_name"] != cell.trace.name or result["gpus"] != cell.gpus:
        return "result is for another trace or cluster size"
    jobs = cell.trace.num_jobs
    for name in _JOB_LISTS:
        if not _numbers(result[name], integers=name == "gang") or len(result[name]) != jobs:
            return f"result field {name!r} is not a list of {jobs} numbers"
    rounds = len(result["round_start_s"]) if isinstance(result["round_start_s"], list) else -1
    for name in _ROUND_LISTS:
        values = result[name]
        if not isinstance(values, list) or len(values) != rounds:
            return f"result field {name!r} does not hold one entry per round"
        nested = name in ("round_job_ids", "round_run_s", "round_overhead_s")
        items = values if nested else [values]
        if not all(_numbers(v, integers=name in ("round_job_ids", "round_gpus_busy")) for v in items):
            return f"result field {name!r} holds something other than numbers"
    for name in ("round_s", "end_time_s"):
        problem = _type_problem(result[name], _NUMBER)
        if problem:
            return f"result field {name!r}: {problem}"
    return None


def record_problem(record: object, cell: Cell) -> str | None:
    """What is wrong with ``record`` (parsed JSON) as the stored record of ``cell``, or
    ``None`` when it can be reused."""
    if not isinstance(record, dict):
        return f"not a cell record (a JSON {type(record).__name__ if record is not None else 'null'})"
    for name in ("key_hash", "key", "row", "result"):
        if name not in record:
            return f"field {name!r} is missing"
    sealed = seal_problem(record)
    if sealed:
        return sealed
    if record["key_hash"] != cell.key_hash:
        return "it belongs to another cell (its key_hash differs)"
    # Compared as this cell would store it: through the same JSON round trip.
    expected_key, stored_key = json.loads(json.dumps(cell.key)), record["key"]
    if stored_key != expected_key:
        if not isinstance(stored_key, dict):
            return "field 'key' is not an object"
        differing = sorted(k for k in expected_key.keys() | stored_key.keys()
                           if stored_key.get(k) != expected_key.get(k))
        return f"its key does not match this cell (differs in {', '.join(differing)})"
    return (_row_problem(record["row"], cell) or range_problem(record["row"])
            or _result_problem(record["result"], cell))
