"""The stored cell record's schema version, content digest and value ranges.

Every record :func:`~.records.make_record` writes carries ``schema`` (:data:`CELL_SCHEMA`)
and ``digest``: the SHA-256 of the record's canonical JSON (every other key, sorted, compact),
so the digest covers whatever fields the record has, metrics added later included. A
resumed run reuses a record only if its schema is this one, its digest matches its content
and every row value is in its range (:func:`range_problem`); anything else is recomputed
with a warning naming the file. The digest detects edits and damage, not a forger who
recomputes it: the record is the user's own file.

To add a metric, add it to the row (and to :data:`~.validate.ROW_FIELDS` if every record
must have it); its range follows from its name (:data:`RANGE_RULES`), and the digest needs
nothing. Bump :data:`CELL_SCHEMA` when the meaning of an existing field changes.
"""

from __future__ import annotations

import hashlib
import json
import math

#: The version of the cell record format this code writes and reads.
CELL_SCHEMA = 2


def digest(record: dict) -> str:
    """SHA-256 (hex) of ``record`` without its ``digest`` key, as canonical JSON (the JSON
    round trip first, so tuples and lists, int and str keys hash as they are stored)."""
    body = json.loads(json.dumps({k: v for k, v in record.items() if k != "digest"}, allow_nan=False))
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def seal(record: dict) -> dict:
    """``record`` with ``schema`` and its ``digest`` set (in place; returned)."""
    record["schema"] = CELL_SCHEMA
    record["digest"] = digest(record)
    return record


def seal_problem(record: dict) -> str | None:
    """Why ``record`` is not a sealed record of this schema, or ``None``."""
    schema = record.get("schema")
    if schema != CELL_SCHEMA:
        found = "no schema version" if schema is None else f"schema {json.dumps(schema)[:20]}"
        return f"{found}, this version reads schema {CELL_SCHEMA}"
    stored = record.get("digest")
    if not isinstance(stored, str):
        return "no content digest"
    try:
        actual = digest(record)
    except (TypeError, ValueError):
        return "content cannot be digested (non-finite numbers)"
    if stored != actual:
        return "its content digest does not match its content (edited or damaged)"
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


#: (test on a row field's name, lowest, lowest allowed itself, highest) in order: the first
#: rule whose test holds sets the field's range. Every number must be finite too.
RANGE_RULES: tuple[tuple, ...] = (
    # shares of jobs or of time: unfair fractions, rho_over_1_05, gang_ftf_over_1_05, ...
    (lambda n: "utilization" in n or n.startswith("unfair_fraction") or "_over_" in n, 0.0, True, 1.0),
    (lambda n: "ftf" in n or n.startswith("rho"), 0.0, False, math.inf),  # rho may be below 1
    (lambda n: n.endswith("_s") and ("jct" in n or "makespan" in n), 0.0, False, math.inf),
    (lambda n: n.endswith("_s"), 0.0, True, math.inf),  # wall times, overheads, round length
    (lambda n: n in ("num_jobs", "gpus"), 1.0, True, math.inf),
    (lambda n: n in ("completed_jobs", "rounds", "seed"), 0.0, True, math.inf),
)


def range_problem(row: dict) -> str | None:
    """The first row value out of its range, or ``None`` (``null`` means "not defined")."""
    for name, value in row.items():
        if not _is_number(value):
            continue
        if not math.isfinite(value):
            return f"row field {name!r} is {value}, not a finite number"
        for test, low, low_ok, high in RANGE_RULES:
            if test(name):
                if value < low or (value == low and not low_ok) or value > high:
                    bounds = f"{'[' if low_ok else '('}{low:g}, {high:g}]"
                    return f"row field {name!r} is {value!r}, outside {bounds}"
                break
    if _is_number(row.get("completed_jobs")) and _is_number(row.get("num_jobs")) \
            and row["completed_jobs"] > row["num_jobs"]:
        return f"row field 'completed_jobs' is {row['completed_jobs']}, more than num_jobs {row['num_jobs']}"
    return None
