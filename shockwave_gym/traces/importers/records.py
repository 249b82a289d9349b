"""What every adapter hands the mapping: one :class:`LoggedJob` per usable row, one
:class:`RowProblem` per unusable or filtered row.

An adapter reads its dataset's own format and checks every field it uses; the mapping to the
job model (:mod:`~shockwave_gym.traces.importers.mapping`) never sees a dataset's spelling.
Times are seconds on one clock per input (a dataset's timestamps or datetimes converted by
:func:`parse_time`); only differences between them matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from shockwave_gym.ascii_numbers import parse_float

#: Reasons a row is filtered out on purpose (counted, not listed one by one).
FILTER_REASONS = ("cpu-only", "non-training")


@dataclass(frozen=True, slots=True)
class LoggedJob:
    """One job as its log records it. ``gpus`` is the logged GPU count (fractional for
    PAI), ``whole_gpus`` the whole GPUs the adapter's rule gives (``None``: ``gpus``
    itself, a whole number); ``run_s`` is the logged service time (end minus start, summed
    over attempts for Philly); ``flags`` name the adapter rules that changed the row
    (``"fractional"``, ``"fail-time"``); ``file`` and ``line`` say where the row is."""

    source_id: str
    user: str
    vc: str
    status: str
    submit_s: float
    run_s: float
    gpus: float
    line: int
    flags: tuple[str, ...] = ()
    whole_gpus: int | None = None
    file: str = ""

    @property
    def gang_gpus(self) -> int:
        return int(self.gpus) if self.whole_gpus is None else self.whole_gpus


@dataclass(frozen=True, slots=True)
class RowProblem:
    """A row that gives no job: ``file:line:field: message``. ``reason`` is
    ``"malformed"``, ``"not-run"`` (the log records no finished run) or one of
    :data:`FILTER_REASONS`."""

    file: str
    line: int
    field: str
    message: str
    reason: str = "malformed"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.field}: {self.message}"


class FieldError(ValueError):
    """One field of a row is unusable: ``field`` and a message; ``reason`` as in
    :class:`RowProblem`."""

    def __init__(self, field: str, message: str, reason: str = "malformed"):
        super().__init__(message)
        self.field, self.message, self.reason = field, message, reason


_EPOCH = datetime(1970, 1, 1)
#: Times outside these bounds (seconds) are refused (about 1970-2100 as datetimes).
MAX_TIME_S = 4.2e9


def parse_time(field: str, raw: object, *, missing: str | None = None) -> float:
    """A time in seconds from a number (seconds) or a ``YYYY-MM-DD HH:MM:SS`` datetime
    (with an optional UTC offset, converted to UTC; naive datetimes are taken as given).

    Empty values, ``None``, ``"None"`` and ``"NaN"`` are missing: with ``missing`` set they
    raise a ``"not-run"`` :class:`FieldError` with that message, else a malformed one.
    """
    if raw is None or (isinstance(raw, str) and raw.strip() in ("", "None", "NaN", "nan", "null")):
        if missing is not None:
            raise FieldError(field, missing, "not-run")
        raise FieldError(field, "missing time")
    if isinstance(raw, bool):
        raise FieldError(field, f"must be a time, got {raw!r}")
    if isinstance(raw, (int, float)):
        value = float(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        try:
            value = parse_float(text)  # ASCII digits only (docs/TRACES.md, Limits)
        except ValueError:
            try:
                stamp = datetime.fromisoformat(text)
            except ValueError:
                raise FieldError(field, f"must be seconds or a 'YYYY-MM-DD HH:MM:SS' time, got {raw!r}") from None
            if stamp.tzinfo is not None:
                stamp = stamp.replace(tzinfo=None) - stamp.utcoffset()
            value = (stamp - _EPOCH).total_seconds()
    else:
        raise FieldError(field, f"must be a time, got {type(raw).__name__}")
    if not math.isfinite(value) or not -MAX_TIME_S <= value <= MAX_TIME_S:
        raise FieldError(field, f"time {raw!r} is out of range")
    return value


def parse_count(field: str, raw: object, *, fractional: bool = False) -> float:
    """A non-negative count (GPUs, instances) from a number or its text."""
    if isinstance(raw, bool) or raw is None:
        raise FieldError(field, f"must be a number, got {raw!r}")
    try:
        value = parse_float(raw.strip()) if isinstance(raw, str) else float(raw)
    except (TypeError, ValueError):
        raise FieldError(field, f"must be a number, got {raw!r}") from None
    if not math.isfinite(value) or value < 0 or value > 1e6:
        raise FieldError(field, f"must be a number from 0 to 1e6, got {raw!r}")
    if not fractional and value != int(value):
        raise FieldError(field, f"must be a whole number, got {raw!r}")
    return value


def parse_text(field: str, raw: object, *, required: bool = True) -> str:
    """A text field; tabs and line breaks are refused, as is an empty required one."""
    if raw is None:
        raw = ""
    if not isinstance(raw, (str, int)) or isinstance(raw, bool):
        raise FieldError(field, f"must be text, got {raw!r}")
    text = str(raw).strip()
    if required and not text:
        raise FieldError(field, "must not be empty")
    if any(ch in text for ch in "\t\r\n") or len(text) > 256:
        raise FieldError(field, "must be one line of at most 256 characters")
    return text


def run_between(start_field: str, start_s: float, end_s: float) -> float:
    """``end_s - start_s``, refused when not positive (the log records no run)."""
    run_s = end_s - start_s
    if run_s <= 0:
        raise FieldError(start_field, f"end is not after start ({run_s:g} s): the log records no run", "not-run")
    return run_s
