"""A finished cell as plain JSON data.

A record holds the cell's key, its result row (metrics, wall times, versions) and the full
:class:`~shockwave_gym.metrics.EpisodeResult` as lists, so that per-job tables
(:func:`~shockwave_gym.metrics.jobs_table`) and figures can be rebuilt from disk after a
resume. Floats survive the JSON round trip exactly; NaN
(an unfinished job) is stored as ``null``.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import platform
from importlib import metadata

import numpy as np

from shockwave_gym.harness.cell_schema import seal
from shockwave_gym.metrics import EpisodeResult

#: Packages whose versions go into every result row.
VERSIONED_PACKAGES = ("shockwave-gym", "numpy", "scipy", "cvxpy", "highspy", "torch")

#: Leading columns of ``results.csv`` (metrics follow, then the rest).
ID_COLUMNS = ("trace", "agent", "seed", "gpus")


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Installed versions (empty string when a package is absent), without importing them."""
    found = {"version_python": platform.python_version()}
    for package in VERSIONED_PACKAGES:
        try:
            found[f"version_{package.replace('-', '_')}"] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[f"version_{package.replace('-', '_')}"] = ""
    return found


def _json_safe(value):
    """numpy scalars/arrays and other non-JSON values -> plain JSON values."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return _json_safe(value.tolist())
    if isinstance(value, np.generic):
        return _json_safe(value.item())
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if value is None or isinstance(value, bool | int | str):
        return value
    return repr(value)


def _floats(array: np.ndarray) -> list:
    return [None if np.isnan(x) else float(x) for x in np.asarray(array, dtype=np.float64)]


def result_to_json(result: EpisodeResult) -> dict:
    """An :class:`EpisodeResult` as plain JSON data (inverse: :func:`result_from_json`)."""
    data = {
        "trace_name": result.trace_name,
        "gpus": int(result.gpus),
        "round_s": float(result.round_s),
        "arrival_s": _floats(result.arrival_s),
        "completion_s": _floats(result.completion_s),
        "isolated_time_s": _floats(result.isolated_time_s),
        "gang": [int(g) for g in result.gang],
        "run_time_s": _floats(result.run_time_s),
        "round_start_s": _floats(result.round_start_s),
        "round_end_s": _floats(result.round_end_s),
        "round_gpus_busy": [int(b) for b in result.round_gpus_busy],
        "round_job_ids": [[int(j) for j in ids] for ids in result.round_job_ids],
        "round_run_s": [_floats(r) for r in result.round_run_s],
        "round_overhead_s": [_floats(o) for o in result.round_overhead_s],
        "end_time_s": float(result.end_time_s),
    }
    if result.heterogeneous:  # only then: homogeneous records keep their exact layout
        data["gpu_types"] = list(result.gpu_types)
        data["type_gpus"] = [int(c) for c in result.type_gpus]
        data["fair_isolated_time_s"] = _floats(result.fair_isolated_time_s)
        data["round_gpu_types"] = [[int(t) for t in types] for types in result.round_gpu_types]
        if result.fair_work_s is not None:
            data["fair_work_s"] = _floats(result.fair_work_s)
    if result.gpu_time_s is not None:  # elastic runs only: the GPUs each job held
        data["gpu_time_s"] = _floats(result.gpu_time_s)
        data["round_gpu_counts"] = [[int(c) for c in counts] for counts in result.round_gpu_counts]
    return data


def _array(values: list, dtype=np.float64) -> np.ndarray:
    if dtype is np.float64:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return np.array(values, dtype=dtype)


def result_from_json(data: dict) -> EpisodeResult:
    """Rebuild the :class:`EpisodeResult` written by :func:`result_to_json`."""
    return EpisodeResult(
        trace_name=data["trace_name"],
        gpus=int(data["gpus"]),
        round_s=float(data["round_s"]),
        arrival_s=_array(data["arrival_s"]),
        completion_s=_array(data["completion_s"]),
        isolated_time_s=_array(data["isolated_time_s"]),
        gang=_array(data["gang"], np.int64),
        run_time_s=_array(data["run_time_s"]),
        round_start_s=_array(data["round_start_s"]),
        round_end_s=_array(data["round_end_s"]),
        round_gpus_busy=_array(data["round_gpus_busy"], np.int64),
        round_job_ids=tuple(_array(ids, np.int64) for ids in data["round_job_ids"]),
        round_run_s=tuple(_array(r) for r in data["round_run_s"]),
        round_overhead_s=tuple(_array(o) for o in data["round_overhead_s"]),
        end_time_s=float(data["end_time_s"]),
        **({
            "gpu_types": tuple(data["gpu_types"]),
            "type_gpus": tuple(int(c) for c in data["type_gpus"]),
            "fair_isolated_time_s": _array(data["fair_isolated_time_s"]),
            "round_gpu_types": tuple(_array(t, np.int64) for t in data["round_gpu_types"]),
            "fair_work_s": _array(data["fair_work_s"]) if "fair_work_s" in data else None,
        } if "gpu_types" in data else {}),
        **({
            "gpu_time_s": _array(data["gpu_time_s"]),
            "round_gpu_counts": tuple(_array(c, np.int64) for c in data["round_gpu_counts"]),
        } if "gpu_time_s" in data else {}),
    )


def make_record(cell, outcome, *, wall_s: float, host: str = "") -> dict:
    """The JSON record of a finished cell (``cell``: :class:`~.cells.Cell`,
    ``outcome``: :class:`~shockwave_gym.runner.EpisodeOutcome`)."""
    row = {
        "trace": cell.trace.name,
        "agent": cell.agent.label,
        "seed": cell.seed,
        "gpus": cell.gpus,
        **outcome.metrics,
        "wall_s": wall_s,
        "episode_wall_s": outcome.wall_s,
        "decision_wall_s": outcome.decision_wall_s,
        "agent_stats": json.dumps(_json_safe(outcome.agent_stats), sort_keys=True),
        "throughputs": cell.throughputs.source,
        "round_s": cell.config.round_s,
        "restart_overhead_s": cell.config.restart_overhead_s,
        **versions(),
        "host": host,
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "key_hash": cell.key_hash,
    }
    return seal({
        "key_hash": cell.key_hash,
        "key": cell.key,
        "row": _json_safe(row),
        "result": result_to_json(outcome.result),
    })
