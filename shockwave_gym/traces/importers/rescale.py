"""Rescaling an imported workload: a time window, a job count, an offered-load target.

**Offered load** (docs/TRACES.md, "Offered load") of jobs j on a cluster of G GPUs::

    load = sum_j gang_j * iso_j / (G * span)

where ``iso_j`` is job j's isolated run time on its gang and ``span`` the time from the
first to the last arrival. A load of 1 offers exactly the cluster's capacity over the
arrival period; above 1 the queue grows while jobs arrive.

To reach a target load the arrival times are multiplied by ``load_now / target`` (gaps
stretch or shrink; every job and its length stay), then rounded to milliseconds.
"""

from __future__ import annotations

from shockwave_gym.errors import InputError


def offered_load(work_gpu_s: float, span_s: float, gpus: int) -> float:
    """``work / (gpus * span)``; ``inf`` when all jobs arrive at once."""
    if span_s <= 0:
        return float("inf")
    return work_gpu_s / (gpus * span_s)


def parse_window(text: str) -> tuple[float, float]:
    """``"START:END"`` in seconds from the first arrival of the input (either side may be
    empty: ``":86400"``, ``"3600:"``)."""
    start_text, sep, end_text = text.partition(":")
    if not sep:
        raise InputError(f"--window: expected START:END in seconds, got {text!r}")
    try:
        start = float(start_text) if start_text.strip() else 0.0
        end = float(end_text) if end_text.strip() else float("inf")
    except ValueError:
        raise InputError(f"--window: expected START:END in seconds, got {text!r}") from None
    if not (start >= 0 and end > start) or start != start:
        raise InputError(f"--window: needs 0 <= START < END, got {text!r}")
    return start, end


def arrival_factor(work_gpu_s: float, span_s: float, gpus: int, target: float) -> float:
    """The factor on arrival times that gives ``target`` load on ``gpus`` GPUs."""
    if not target > 0 or target == float("inf"):
        raise InputError(f"--load must be a number > 0, got {target!r}")
    if span_s <= 0:
        raise InputError("--load: every kept job arrives at the same time, so no spacing of arrivals sets a load")
    return offered_load(work_gpu_s, span_s, gpus) / target
