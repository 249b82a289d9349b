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

import codecs
import itertools
import os
import tempfile
from collections.abc import Iterator
from importlib.resources.abc import Traversable
from pathlib import Path

from shockwave_gym.errors import InputError, TraceError
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import jsonl, tsv
from shockwave_gym.traces.bundled import resolve_trace_path
from shockwave_gym.traces.named import suite_trace_by_name
from shockwave_gym.traces.types import Trace
from shockwave_gym.traces.validation import MAX_LINE_BYTES, MAX_TRACE_JOBS, EpochBudget, build_job

FORMATS = ("tsv", "jsonl")


def format_for(path: str | Path | Traversable) -> str:
    """``"jsonl"`` for a ``.jsonl`` name, ``"tsv"`` otherwise."""
    return "jsonl" if str(getattr(path, "name", path)).endswith(".jsonl") else "tsv"


def _read_lines(resource: Path | Traversable, file: str) -> Iterator[tuple[int, str]]:
    """Non-blank ``(line number, text)`` pairs of a trace file, line endings removed, read
    one line at a time (a huge file is refused at its first bad line without being read
    whole). Lines split on ``\n`` only: str.splitlines() would also break on \x0b, \x1c,
    \u2028 ... and miscount lines."""
    try:
        handle = resource.open("rb")
    except OSError as exc:
        raise TraceError(file, f"cannot read trace: {exc.strerror or exc}") from None
    with handle:
        offset, any_text, any_line = 0, False, False
        for line_no in itertools.count(1):
            try:
                raw = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise TraceError(file, f"cannot read trace: {exc.strerror or exc}") from None
            if not raw:
                break
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise TraceError(file, f"line longer than {MAX_LINE_BYTES:,} bytes: not a trace line", line_no)
            body = raw[3:] if line_no == 1 and raw.startswith(codecs.BOM_UTF8) else raw
            try:
                line = body.decode("utf-8")
            except UnicodeDecodeError as exc:
                start = offset + (len(raw) - len(body)) + exc.start
                raise TraceError(file, f"not UTF-8 text: {exc.reason} at byte {start}", line_no) from None
            offset += len(raw)
            any_text = any_text or bool(line)
            line = line.removesuffix("\n").removesuffix("\r")
            if line.strip():
                any_line = True
                yield line_no, line
    if not any_line:
        what = "empty" if not any_text else "blank-only"
        raise TraceError(file, f"trace is {what}: it must hold at least one job")


def _over_job_limit(resource: Path | Traversable) -> int | None:
    """The line number of the trace's job MAX_TRACE_JOBS + 1 (its non-blank line of that
    rank), or None: a count of the lines, without parsing any (stops at that line)."""
    try:
        with resource.open("rb") as handle:
            newlines = sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
            if newlines < MAX_TRACE_JOBS:  # at most MAX_TRACE_JOBS lines, blank or not
                return None
            handle.seek(0)
            count = 0
            for line_no, raw in enumerate(handle, start=1):
                if raw.strip():
                    count += 1
                    if count > MAX_TRACE_JOBS:
                        return line_no
    except OSError:
        return None  # reported when the lines are read
    return None


def _check_gpus(gpus: int | None) -> None:
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
        raise InputError(f"gpus must be a positive integer, got {gpus!r}")


class _Stop(Exception):
    """A limit was crossed: the rest of the file is not read."""


def _parse(
    source: str | Path, throughputs: ThroughputTable | None, gpus: int | None, *, first_only: bool = False
) -> Trace | list[TraceError]:
    """The checked trace, or the problems found (never both): with ``first_only``, the
    first one (reading stops there), else every one up to the job-count and epoch limits."""
    _check_gpus(gpus)
    try:
        resource = resolve_trace_path(source)
    except TraceError as exc:
        return [exc]
    file = str(resource)
    table = ThroughputTable.builtin_v100() if throughputs is None else throughputs
    reader = jsonl.read_rows if format_for(resource) == "jsonl" else tsv.read_rows
    over = _over_job_limit(resource)
    if over is not None:  # refused before any line is parsed
        return [TraceError(file, f"more than {MAX_TRACE_JOBS:,} jobs (this is job {MAX_TRACE_JOBS + 1:,}): a trace "
                                 f"may hold at most {MAX_TRACE_JOBS:,} (docs/TRACES.md, Limits)", over)]
    errors: list[TraceError] = []
    jobs, budget = [], EpochBudget()
    try:
        for line in _read_lines(resource, file):
            rows, line_errors = reader([line], file)
            errors.extend(line_errors)
            for row in rows:
                job, row_errors = build_job(row, file, table, gpus, budget)
                errors.extend(row_errors)
                if budget.exceeded:  # refuse the trace before anything holds all its epochs
                    raise _Stop
                if job is not None:
                    jobs.append(job)
            if errors and first_only:
                break
    except TraceError as exc:  # unreadable, not UTF-8, a line too long, empty
        errors.append(exc)
    except _Stop:
        pass
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
    result = _parse(source, throughputs, gpus, first_only=True)
    if isinstance(result, list):
        raise result[0]
    return result


def _suite_trace(source, gpus: int | None) -> Trace | None:
    """The generated trace of a suite trace name that is not a file
    (:mod:`~shockwave_gym.traces.suite_names`), checked against ``gpus``; else ``None``."""
    if not isinstance(source, str) or Path(source).is_file():
        return None
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
