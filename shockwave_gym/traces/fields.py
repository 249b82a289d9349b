"""The twelve fields of a trace row, and how each one is checked.

Both on-disk formats describe the same twelve fields. The TSV format gives them by
position as text; the JSON-lines format gives them by key as JSON values. Each field has a
canonical ``key`` (also its name in TSV error messages) and a ``json_key`` (its name in the
JSON-lines format and in that format's error messages). Field checks here look at one
value at a time; checks that need the whole job (throughput coverage) live in
:mod:`shockwave_gym.traces.validation`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from shockwave_gym.adaptation import registered_modes
from shockwave_gym.ascii_numbers import FLOAT_TEXT, INT_TEXT
from shockwave_gym.jobs import GANG_SIZES, parse_job_type


class FieldProblem(ValueError):
    """One field's value is invalid; the message says why (without file or line)."""


@dataclass(frozen=True)
class Field:
    """One trace column. ``kind`` is ``"str"``, ``"int"`` or ``"float"``."""

    key: str
    json_key: str
    kind: str
    json_required: bool


#: Columns in TSV order (docs/TRACES.md, "The two formats").
FIELDS: tuple[Field, ...] = (
    Field("job_type", "job_type", "str", True),
    Field("command", "command", "str", False),
    Field("working_dir", "working_dir", "str", False),
    Field("step_arg", "step_arg", "str", False),
    Field("needs_data_dir", "needs_data_dir", "int", False),
    Field("total_iterations", "total_iterations", "int", True),
    Field("gang", "gang", "int", True),
    Field("mode", "mode", "str", True),
    Field("priority", "priority", "float", True),
    Field("slo", "slo_s", "float", True),
    Field("duration", "duration_s", "float", False),
    Field("arrival", "arrival_s", "float", True),
)
NUM_FIELDS = len(FIELDS)
FIELD_BY_KEY: dict[str, Field] = {f.key: f for f in FIELDS}
FIELD_BY_JSON_KEY: dict[str, Field] = {f.json_key: f for f in FIELDS}

#: Values of the optional JSON-lines keys when absent (also the JobSpec defaults).
JSON_DEFAULTS: dict[str, Any] = {
    "command": "",
    "working_dir": "",
    "step_arg": "",
    "needs_data_dir": 1,
    "duration": 0.0,
}

_INT_TEXT = INT_TEXT

#: Limits on single values (docs/TRACES.md, "Limits"). ``total_iterations`` stays exact as a
#: float; arrivals stay within about 31 years; priorities stay far from float overflow when
#: agents weigh and sum them. A job's epoch count is bounded by
#: :data:`shockwave_gym.profile.MAX_EPOCHS`, a whole trace's by
#: :data:`shockwave_gym.traces.validation.MAX_TRACE_EPOCHS`.
MAX_TOTAL_ITERATIONS = 10**15
MAX_ARRIVAL_S = 1e9
MAX_PRIORITY = 1e6
MIN_PRIORITY = 1e-6
#: Longest number (in characters) read at all; longer ones are refused unread.
MAX_NUMBER_CHARS = 40


class LongNumber(str):
    """A JSON number too long to convert (kept as its text so the field check reports it)."""


def parse_json_int(text: str) -> int | LongNumber:
    """``json.loads`` hook: integers of up to :data:`MAX_NUMBER_CHARS` characters."""
    return int(text) if len(text) <= MAX_NUMBER_CHARS else LongNumber(text)


def parse_json_float(text: str) -> float | LongNumber:
    """``json.loads`` hook: reals of up to :data:`MAX_NUMBER_CHARS` characters."""
    return float(text) if len(text) <= MAX_NUMBER_CHARS else LongNumber(text)


def _too_long(raw: Any) -> FieldProblem:
    return FieldProblem(f"a number of {len(raw)} characters is out of range (at most {MAX_NUMBER_CHARS})")


def _show(raw: Any, from_text: bool) -> str:
    """A value as its format spells it: quoted TSV text, or JSON (``true``, ``"5"``)."""
    if from_text:
        return repr(raw)
    try:
        return json.dumps(raw)
    except (TypeError, ValueError):
        return repr(raw)


def _to_int(raw: Any, from_text: bool) -> int:
    if isinstance(raw, LongNumber) or (from_text and len(raw.strip()) > MAX_NUMBER_CHARS):
        raise _too_long(raw.strip())
    if from_text:
        text = raw.strip()
        if not _INT_TEXT.fullmatch(text):
            raise FieldProblem(f"must be an integer, got {_show(raw, from_text)}")
        return int(text)
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise FieldProblem(f"must be a JSON integer, got {_show(raw, from_text)}")
    return raw


def _to_float(raw: Any, from_text: bool) -> float:
    if isinstance(raw, LongNumber) or (from_text and len(raw.strip()) > MAX_NUMBER_CHARS):
        raise _too_long(raw.strip())
    if from_text:
        if not FLOAT_TEXT.fullmatch(raw.strip()):  # ASCII digits only (no "３２", no "1_0")
            raise FieldProblem(f"must be a number in ASCII digits, got {_show(raw, from_text)}")
        return float(raw.strip())
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise FieldProblem(f"must be a JSON number, got {_show(raw, from_text)}")
    return float(raw)


def _finite(value: float, shown: str) -> float:
    if not math.isfinite(value):
        raise FieldProblem(f"must be a finite number, got {shown}")
    return value


def parse_field(field: Field, raw: Any, *, from_text: bool, gpus: int | None = None) -> Any:
    """Check one raw value and return it converted; raise :class:`FieldProblem` if invalid.

    ``from_text`` says the value is a TSV string (numbers are parsed from text) rather than
    a JSON value (numbers must already be JSON numbers). ``job_type`` converts to
    ``(model, batch_size)``.
    """
    shown = _show(raw, from_text)
    if field.kind == "str":
        if not isinstance(raw, str) or isinstance(raw, LongNumber):
            raise FieldProblem(f"must be a string, got {shown}")
        value: Any = raw
    elif field.kind == "int":
        value = _to_int(raw, from_text)
    else:
        value = _to_float(raw, from_text)

    key = field.key
    if key == "job_type":
        try:
            return parse_job_type(value)
        except ValueError as exc:
            raise FieldProblem(str(exc)) from None
    if key == "needs_data_dir" and value not in (0, 1):
        raise FieldProblem(f"must be 0 or 1, got {shown}")
    if key == "total_iterations" and not 1 <= value <= MAX_TOTAL_ITERATIONS:
        raise FieldProblem(f"must be an integer from 1 to 10**15, got {shown}")
    if key == "gang":
        if value not in GANG_SIZES:
            sizes = ", ".join(map(str, GANG_SIZES))
            raise FieldProblem(f"must be one of {sizes} GPUs, got {shown}")
        if gpus is not None and value > gpus:
            raise FieldProblem(f"gang of {value} GPUs does not fit a cluster of {gpus} GPUs")
    if key == "mode" and value not in registered_modes():
        raise FieldProblem(
            f"unknown adaptation mode {shown}; registered: {', '.join(registered_modes())}"
        )
    if key == "priority":
        _finite(value, shown)
        if not MIN_PRIORITY <= value <= MAX_PRIORITY:
            raise FieldProblem(f"must be a number from {MIN_PRIORITY:g} to {MAX_PRIORITY:g}, got {shown}")
    if key == "slo":
        _finite(value, shown)
    if key == "duration":
        _finite(value, shown)
        if value < 0:
            raise FieldProblem(f"must be a number of seconds >= 0, got {shown}")
    if key == "arrival":
        _finite(value, shown)
        if not 0 <= value <= MAX_ARRIVAL_S:
            raise FieldProblem(f"must be a number of seconds from 0 to {MAX_ARRIVAL_S:g}, got {shown}")
    return value
