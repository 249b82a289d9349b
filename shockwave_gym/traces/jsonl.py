"""Our JSON-lines trace format: one JSON object per line, fields by name.

Schema of each object (the same twelve fields as the TSV format)::

    key               type     required  meaning
    job_type          string   yes       "<Model> (batch size <B>)": model and initial batch size
    total_iterations  integer  yes       iterations at the initial batch size, >= 1
    gang              integer  yes       GPUs per job: 1, 2, 4 or 8
    mode              string   yes       adaptation mode: static, accordion, gns (or registered)
    priority          number   yes       priority weight, finite and > 0
    slo_s             number   yes       SLO in seconds, -1 for none
    arrival_s         number   yes       arrival time in seconds, finite and >= 0
    command           string   no ("")   how to launch the real job (ignored by the simulation)
    working_dir       string   no ("")   idem
    step_arg          string   no ("")   idem
    needs_data_dir    integer  no (1)    0 or 1; idem
    duration_s        number   no (0)    nominal duration; ignored, the simulation recomputes it

plus the optional origin keys of imported traces (``source_id``, ``user``, ``vc``,
``status``, ``logged_run_s``, ``logged_gpus``; :mod:`shockwave_gym.traces.origin_fields`)
and the optional ``gangs`` list of an elastic job (:mod:`shockwave_gym.traces.elastic_fields`).

``job_type`` (rather than separate model and batch-size keys) keeps one spelling of a job's
type across both formats. Blank lines are skipped. A key outside this table, a missing
required key, a value of the wrong JSON type or a line that is not a JSON object is an
error naming the line (and the key). Errors name fields by these keys (``slo_s``,
``arrival_s``, ``duration_s``), unlike TSV errors, which use the column names.
"""

from __future__ import annotations

import json
import math
from typing import Any

from shockwave_gym.errors import TraceError
from shockwave_gym.jobs import JobSpec
from shockwave_gym.traces.elastic_fields import GANGS_KEY
from shockwave_gym.traces.fields import (
    FIELD_BY_JSON_KEY,
    FIELD_BY_KEY,
    FIELDS,
    JSON_DEFAULTS,
    parse_json_float,
    parse_json_int,
)
from shockwave_gym.traces.origin_fields import ORIGIN_KEYS, origin_items
from shockwave_gym.traces.validation import RawRow

_NAMES = {field.key: field.json_key for field in FIELDS} | {key: key for key in (*ORIGIN_KEYS, GANGS_KEY)}
_KNOWN_KEYS = (*FIELD_BY_JSON_KEY, *ORIGIN_KEYS, GANGS_KEY)


class _DuplicateKey(ValueError):
    pass


def _constant(name: str) -> float:
    # Python's json accepts NaN/Infinity, which are not JSON; read them as floats anyway
    # so that the field check reports them as non-finite numbers under the right key.
    return float(name)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


def read_rows(lines: list[tuple[int, str]], file: str) -> tuple[list[RawRow], list[TraceError]]:
    """Decode each ``(line number, text)`` into a raw row; structural problems are errors."""
    rows: list[RawRow] = []
    errors: list[TraceError] = []
    for line_no, text in lines:
        try:
            obj = json.loads(
                text, parse_constant=_constant, object_pairs_hook=_object,
                parse_int=parse_json_int, parse_float=parse_json_float,
            )
        except json.JSONDecodeError as exc:
            errors.append(TraceError(file, f"not valid JSON: {exc.msg} (column {exc.colno})", line_no))
            continue
        except RecursionError:
            errors.append(TraceError(file, "JSON nested too deeply: a trace line is one flat object", line_no))
            continue
        except _DuplicateKey as exc:
            key = exc.args[0]
            errors.append(TraceError(file, f"key {key!r} appears more than once", line_no, key))
            continue
        if not isinstance(obj, dict):
            errors.append(TraceError(
                file, f"must be a JSON object, got {type(obj).__name__}", line_no
            ))
            continue
        line_errors = []
        for key in obj:
            if key not in _KNOWN_KEYS:
                known = ", ".join(_KNOWN_KEYS)
                line_errors.append(TraceError(
                    file, f"unknown key {key!r}; known keys: {known}", line_no, key
                ))
        for field in FIELDS:
            if field.json_required and field.json_key not in obj:
                line_errors.append(TraceError(
                    file, f"missing required key {field.json_key!r}", line_no, field.json_key
                ))
        if line_errors:
            errors.extend(line_errors)
            continue
        values = {
            FIELD_BY_JSON_KEY[key].key if key in FIELD_BY_JSON_KEY else key: value
            for key, value in obj.items()
        }
        rows.append(RawRow(line_no, values, _NAMES, False))
    return rows, errors


def _number(value: float) -> int | float:
    # Integral values are written without ".0" so files stay readable; they read back as
    # the same float.
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return int(value)
    return float(value)


def format_line(job: JobSpec) -> str:
    """One JSON line (without the line break) for ``job``; optional keys only if not default."""
    obj: dict[str, Any] = {
        "job_type": job.job_type,
        "total_iterations": job.total_iterations,
        "gang": job.gang,
        "mode": job.mode,
        "priority": _number(job.priority),
        "slo_s": _number(job.slo_s),
        "arrival_s": _number(job.arrival_s),
    }
    optional = {
        "command": job.command,
        "working_dir": job.working_dir,
        "step_arg": job.step_arg,
        "needs_data_dir": job.needs_data_dir,
        "duration": job.duration_s,
    }
    for key, value in optional.items():
        if value != JSON_DEFAULTS[key]:
            obj[FIELD_BY_KEY[key].json_key] = _number(value) if key == "duration" else value
    if job.origin is not None:
        for key, value in origin_items(job.origin):
            obj[key] = _number(value) if isinstance(value, float) else value
    if job.gangs:
        obj[GANGS_KEY] = list(job.gangs)
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)
