"""Rescaling an imported workload: a time window, a job count, an offered-load target.

The offered load is :mod:`shockwave_gym.traces.load`'s (docs/TRACES.md, "Offered load").

To reach a target load the arrival times are multiplied by ``load_now / target`` (gaps
stretch or shrink; every job and its length stay), then rounded to milliseconds.
"""

from __future__ import annotations

from shockwave_gym.ascii_numbers import parse_float
from shockwave_gym.errors import InputError
from shockwave_gym.traces.load import offered_load_of_work


def parse_window(text: str) -> tuple[float, float]:
    """``"START:END"`` in seconds from the first arrival of the input (either side may be
    empty: ``":86400"``, ``"3600:"``)."""
    start_text, sep, end_text = text.partition(":")
    if not sep:
        raise InputError(f"--window: expected START:END in seconds, got {text!r}")
    try:
        start = parse_float(start_text) if start_text.strip() else 0.0
        end = parse_float(end_text) if end_text.strip() else float("inf")
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
    return offered_load_of_work(work_gpu_s, span_s, gpus) / target
