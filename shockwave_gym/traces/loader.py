"""Reading, validating and writing trace files.

A trace *source* is a path or a bundled trace name (see :mod:`shockwave_gym.traces.bundled`).
The format follows the extension: ``.jsonl`` is our JSON-lines format
(:mod:`shockwave_gym.traces.jsonl`), anything else the authors' TSV format
(:mod:`shockwave_gym.traces.tsv`). Both follow one trace grammar (docs/TRACES.md, "What the loader checks"):

* UTF-8 (a leading byte-order mark is allowed), ``\\n`` or ``\\r\\n`` line endings;
* blank lines are skipped, and line numbers count every physical line from 1;
* an empty or blank-only file is an error without a line number;
* every field is checked, then every batch size the job can reach against the throughput
  table (and the gang against ``gpus`` when given);
* jobs are sorted stably by arrival and numbered in that order.

Every problem is a :class:`~shockwave_gym.errors.TraceError` naming file, line and field.
"""

from __future__ import annotations

import os
import tempfile
from importlib.resources.abc import Traversable
from pathlib import Path

from shockwave_gym.errors import InputError, TraceError
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import jsonl, tsv
from shockwave_gym.traces.bundled import resolve_trace_path
from shockwave_gym.traces.types import Trace
from shockwave_gym.traces.validation import EpochBudget, build_job

FORMATS = ("tsv", "jsonl")


def format_for(path: str | Path | Traversable) -> str:
    """``"jsonl"`` for a ``.jsonl`` name, ``"tsv"`` otherwise."""
    return "jsonl" if str(getattr(path, "name", path)).endswith(".jsonl") else "tsv"


def _read_lines(resource: Path | Traversable, file: str) -> list[tuple[int, str]]:
    """Non-blank ``(line number, text)`` pairs of a trace file, line endings removed."""
    try:
        data = resource.read_bytes()
    except OSError as exc:
        raise TraceError(file, f"cannot read trace: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line_no = data[: exc.start].count(b"\n") + 1
        raise TraceError(file, f"not UTF-8 text: {exc.reason} at byte {exc.start}", line_no) from None
    # split on "\n" only: str.splitlines() would also break on \x0b, \x1c, \u2028 ... and
    # miscount lines.
    lines = []
    for line_no, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if line.strip():
            lines.append((line_no, line))
    if not lines:
        what = "empty" if not text else "blank-only"
        raise TraceError(file, f"trace is {what}: it must hold at least one job")
    return lines


def _check_gpus(gpus: int | None) -> None:
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
        raise InputError(f"gpus must be a positive integer, got {gpus!r}")


def _parse(
    source: str | Path, throughputs: ThroughputTable | None, gpus: int | None
) -> Trace | list[TraceError]:
    """The checked trace, or every problem found (never both)."""
    _check_gpus(gpus)
    try:
        resource = resolve_trace_path(source)
        file = str(resource)
        lines = _read_lines(resource, file)
    except TraceError as exc:
        return [exc]
    table = ThroughputTable.builtin_v100() if throughputs is None else throughputs
    reader = jsonl.read_rows if format_for(resource) == "jsonl" else tsv.read_rows
    rows, errors = reader(lines, file)
    jobs, budget = [], EpochBudget()
    for row in rows:
        job, row_errors = build_job(row, file, table, gpus, budget)
        errors.extend(row_errors)
        if budget.exceeded:  # refuse the trace before anything holds all its epochs
            break
        if job is not None:
            jobs.append(job)
    if errors:
        errors.sort(key=lambda e: e.line or 0)  # stable: fields keep column order per line
        return errors
    return Trace.from_jobs(Path(resource.name).stem, jobs, file)


def load_trace(
    source: str | Path, throughputs: ThroughputTable | None = None, gpus: int | None = None
) -> Trace:
    """Load and validate a trace file or bundled trace.

    ``throughputs`` defaults to the built-in V100 table. With ``gpus``, every gang must fit.
    Raises :class:`~shockwave_gym.errors.TraceError` for the first problem (in file order);
    :func:`validate_trace` lists all of them. The trace's name is the file stem (for a
    bundled trace, its bundled name).
    """
    generated = _suite_trace(source, gpus)
    if generated is not None:
        return generated
    result = _parse(source, throughputs, gpus)
    if isinstance(result, list):
        raise result[0]
    return result


def _suite_trace(source, gpus: int | None) -> Trace | None:
    """The generated trace of a suite trace name that is not a file
    (:mod:`~shockwave_gym.traces.suite_names`), checked against ``gpus``; else ``None``."""
    if not isinstance(source, str) or Path(source).is_file():
        return None
    from shockwave_gym.traces.suite_names import suite_trace_by_name

    trace = suite_trace_by_name(source)
    if trace is not None and gpus is not None:
        too_big = [job for job in trace.jobs if job.gang > gpus]
        if too_big:
            raise TraceError(source, f"job {too_big[0].job_id} needs {too_big[0].gang} GPUs; "
                                     f"the cluster has {gpus}")
    return trace


def validate_trace(
    source: str | Path, throughputs: ThroughputTable | None = None, gpus: int | None = None
) -> list[TraceError]:
    """Every problem of a trace, in file order; ``[]`` when it loads."""
    result = _parse(source, throughputs, gpus)
    return result if isinstance(result, list) else []


def save_trace(trace: Trace, path: str | Path, fmt: str | None = None) -> None:
    """Write ``trace`` to ``path`` atomically, in ``fmt`` (``"tsv"``/``"jsonl"``).

    ``fmt`` defaults to the extension (``.jsonl`` or TSV). Output is UTF-8 with ``\\n``
    line endings, so the same trace always gives the same bytes. A TSV cannot hold tabs or
    line breaks inside text fields; such a trace raises ``TraceError``.
    """
    path = Path(path)
    fmt = format_for(path) if fmt is None else fmt
    if fmt not in FORMATS:
        raise InputError(f"unknown trace format {fmt!r}; use one of {', '.join(FORMATS)}")
    formatter = jsonl.format_line if fmt == "jsonl" else tsv.format_line
    try:
        text = "".join(formatter(job) + "\n" for job in trace.jobs)
    except TraceError as exc:
        raise TraceError(str(path), exc.message) from None
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o644)  # mkstemp's 0600 would make traces private
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
