"""The optional origin keys of a JSON-lines trace line (imported traces).

A job imported from a cluster log (``shockwave-gym import-trace``) carries what the log
says about it in six optional keys; the loader checks them, keeps them on
:attr:`JobSpec.origin <shockwave_gym.jobs.JobSpec.origin>` and never hands them to a
scheduler (they are not part of :class:`~shockwave_gym.jobs.PublicJobSpec`)::

    key            type     meaning
    source_id      string   the dataset's job id ("#k" appended for part k of a split job)
    user           string   the user who submitted it
    vc             string   its virtual cluster (Philly, Helios) or queue
    status         string   completed, killed, failed, cancelled, timeout or node_fail
    logged_run_s   number   isolated seconds after which the log says it ended; only with a
                            status other than completed, and then required
    logged_gpus    number   GPUs the log gives (fractional for Alibaba PAI), >= 0

The TSV format has no place for them; writing such a trace as TSV is an error.
"""

from __future__ import annotations

import math
from typing import Any

from shockwave_gym.jobs import JOB_STATUSES, JobOrigin
from shockwave_gym.traces.fields import MAX_ARRIVAL_S, LongNumber

#: Origin keys, in the order they are written.
ORIGIN_KEYS: tuple[str, ...] = ("source_id", "user", "vc", "status", "logged_run_s", "logged_gpus")
#: Longest text value accepted in an origin key.
MAX_ORIGIN_TEXT = 256
#: Largest GPU count accepted in ``logged_gpus``.
MAX_LOGGED_GPUS = 1_000_000


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str) or isinstance(value, LongNumber):
        raise ValueError(f"must be a string, got {value!r}")
    if len(value) > MAX_ORIGIN_TEXT:
        raise ValueError(f"must be at most {MAX_ORIGIN_TEXT} characters, got {len(value)}")
    if any(ch in value for ch in "\t\n\r"):
        raise ValueError("must not hold tabs or line breaks")
    return value


def _number(value: Any, low: float, high: float, *, open_low: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a JSON number, got {value!r}")
    number = float(value)
    below = number <= low if open_low else number < low
    if not math.isfinite(number) or below or number > high:
        side = ">" if open_low else ">="
        raise ValueError(f"must be a finite number {side} {low:g} and <= {high:g}, got {value!r}")
    return number


def parse_origin(values: dict[str, Any]) -> tuple[JobOrigin | None, list[tuple[str, str]]]:
    """The origin held by ``values`` (``None`` if it holds no origin key) and its problems
    as ``(key, message)`` pairs."""
    present = [key for key in ORIGIN_KEYS if key in values]
    if not present:
        return None, []
    problems: list[tuple[str, str]] = []
    parsed: dict[str, Any] = {}
    for key in present:
        value = values[key]
        try:
            if key == "logged_run_s":
                parsed[key] = _number(value, 0.0, MAX_ARRIVAL_S, open_low=True)
            elif key == "logged_gpus":
                parsed[key] = _number(value, 0.0, MAX_LOGGED_GPUS, open_low=False)
            else:
                parsed[key] = _text(key, value)
                if key == "status" and value not in JOB_STATUSES:
                    raise ValueError(f"must be one of {', '.join(JOB_STATUSES)}, got {value!r}")
        except ValueError as exc:
            problems.append((key, str(exc)))
    if problems:
        return None, problems
    status = parsed.get("status", "")
    if "logged_run_s" in parsed and status in ("", "completed"):
        problems.append(("logged_run_s", "only a job that ended early (a status other than completed) has a logged run time"))
    if status not in ("", "completed") and "logged_run_s" not in parsed:
        problems.append(("status", f"a job with status {status!r} ended early and needs logged_run_s"))
    if problems:
        return None, problems
    return JobOrigin(**parsed), []


def origin_items(origin: JobOrigin) -> list[tuple[str, Any]]:
    """The origin's keys and values to write, defaults left out."""
    defaults = JobOrigin()
    return [
        (key, getattr(origin, key)) for key in ORIGIN_KEYS
        if getattr(origin, key) != getattr(defaults, key)
    ]
