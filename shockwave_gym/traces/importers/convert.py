"""``import-trace``: read a dataset, map and rescale its jobs, write a JSON-lines trace.

The reading streams; each kept job is held as a few numbers in columns (about 60 bytes plus
its id), then the jobs are sorted by arrival (ties in input order), windowed, cut to a job
count, rescaled to a load, and written one line at a time to a temporary file renamed into
place. The same inputs and options always give the same bytes.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shockwave_gym.errors import InputError
from shockwave_gym.jobs import JOB_STATUSES, JobOrigin, JobSpec
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.fields import MAX_ARRIVAL_S
from shockwave_gym.traces.importers import acme, helios, pai, philly
from shockwave_gym.traces.importers.mapping import JobMapper
from shockwave_gym.traces.importers.records import FILTER_REASONS, FieldError, LoggedJob, RowProblem
from shockwave_gym.traces.importers.rescale import arrival_factor, parse_window
from shockwave_gym.traces.jsonl import format_line
from shockwave_gym.traces.load import offered_load_of_work
from shockwave_gym.traces.loader import format_for
from shockwave_gym.traces.validation import MAX_TRACE_EPOCHS

READERS: dict[str, Callable[[list], Iterator[LoggedJob | RowProblem]]] = {
    "philly": philly.read,
    "helios": helios.read,
    "pai": pai.read,
    "acme": acme.read,
}
FORMATS = tuple(READERS)


@dataclass(frozen=True)
class ImportOptions:
    """What ``import-trace`` was asked for (flags of the same names)."""

    fmt: str
    paths: tuple[str, ...]
    out: str
    seed: int = 0
    gpus: int | None = None
    load: float | None = None
    jobs: int | None = None
    window: str | None = None
    large: str = "split"
    throughputs: ThroughputTable | None = None


@dataclass
class ImportSummary:
    """Counts and loads of one import (printed by the CLI)."""

    rows: int = 0
    problems: Counter = field(default_factory=Counter)
    flags: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)
    outside_window: int = 0
    beyond_jobs: int = 0
    written: int = 0
    epochs: int = 0
    gpus: int | None = None
    loads: dict[str, float] = field(default_factory=dict)  # label -> GPU-equivalents of work

    def lines(self) -> list[str]:
        unusable = sum(n for reason, n in self.problems.items() if reason not in FILTER_REASONS)
        out = [f"read {self.rows} rows: {self.written} trace jobs written; "
               f"{unusable} unusable rows (listed above)"]
        if self.problems:
            out.append("rows without a job by reason: " + _counts(self.problems))
        if self.outside_window or self.beyond_jobs:
            out.append(f"left out by --window: {self.outside_window}; by --jobs: {self.beyond_jobs}")
        if self.flags:
            out.append("mapping rules applied (logged jobs): " + _counts(self.flags))
        out.append("statuses: " + (_counts(self.statuses) or "none"))
        for label, work in self.loads.items():
            what = f"{work / self.gpus:.3f} on {self.gpus} GPUs" if self.gpus else f"{work:.2f} busy GPUs"
            out.append(f"offered load, {label}: {what}")
        if self.epochs > MAX_TRACE_EPOCHS:
            out.append(f"warning: the trace holds {self.epochs:,} epochs, more than the loader's "
                       f"{MAX_TRACE_EPOCHS:,} (docs/TRACES.md, Limits): cut it with --window or --jobs")
        return out


def _counts(counter: Counter) -> str:
    return ", ".join(f"{key} {n}" for key, n in sorted(counter.items()))


class _Columns:
    """The kept jobs, a few numbers each; ids as UTF-8 in one buffer."""

    def __init__(self) -> None:
        self.submit, self.iso, self.logged_run = array("d"), array("d"), array("d")
        self.logged_work, self.logged_gpus = array("d"), array("d")
        self.template, self.epochs, self.status = array("H"), array("q"), array("B")
        self.user, self.vc = array("I"), array("I")
        self.id_bytes, self.id_ends = bytearray(), array("Q")
        self.names: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.id_ends)

    def name(self, text: str) -> int:
        return self.names.setdefault(text, len(self.names))

    def add_id(self, text: str) -> None:
        self.id_bytes += text.encode()
        self.id_ends.append(len(self.id_bytes))

    def source_id(self, i: int) -> str:
        start = self.id_ends[i - 1] if i else 0
        return self.id_bytes[start:self.id_ends[i]].decode()


def _check_options(options: ImportOptions) -> tuple[float, float] | None:
    """Refuse options that cannot be honoured, before any input is read; the parsed window."""
    if options.fmt not in READERS:
        raise InputError(f"--format must be one of {', '.join(FORMATS)}, got {options.fmt!r}")
    if options.load is not None and options.gpus is None:
        raise InputError("--load needs --gpus: a load is relative to a cluster size")
    if format_for(options.out) != "jsonl":
        raise InputError(f"--out {options.out}: an imported trace is written as JSON lines, and a trace file's "
                         "extension names its format (.jsonl JSON lines, any other the authors' TSV, which has "
                         "no place for the origin keys): give a .jsonl name")
    seen: dict[object, str] = {}
    for path in options.paths:
        identity = _file_identity(path)
        if identity in seen:
            same = "" if path == seen[identity] else f" (the same file as {seen[identity]})"
            raise InputError(f"FILE {path}: given twice{same}; give each file once, or its jobs are read twice")
        seen[identity] = path
    return None if options.window is None else parse_window(options.window)


def _file_identity(path: str) -> object:
    """What makes two paths one file: device and inode when it exists, else the resolved path."""
    try:
        stat = os.stat(path)
    except OSError:
        return Path(path).resolve()
    return (stat.st_dev, stat.st_ino)


def import_trace(options: ImportOptions, report: Callable[[RowProblem], None]) -> ImportSummary:
    """Convert ``options.paths`` into ``options.out``; each unusable row goes to ``report``."""
    window = _check_options(options)
    table = options.throughputs or ThroughputTable.builtin_v100()
    mapper = JobMapper(table, options.seed, options.large)
    summary, cols = ImportSummary(gpus=options.gpus), _Columns()
    for item in READERS[options.fmt](list(options.paths)):
        summary.rows += 1
        if isinstance(item, RowProblem):
            summary.problems[item.reason] += 1
            if item.reason not in FILTER_REASONS:
                report(item)
            continue
        try:
            parts, flags = mapper.map(item)
        except FieldError as exc:
            problem = RowProblem(item.file, item.line, exc.field, exc.message, exc.reason)
            summary.problems[problem.reason] += 1
            report(problem)
            continue
        for flag in (*item.flags, *flags):
            summary.flags[flag] += 1
        for part in parts:
            cols.submit.append(item.submit_s)
            cols.iso.append(part.isolated_s)
            cols.logged_run.append(part.logged_run_s)
            cols.logged_work.append(part.logged_work)
            cols.logged_gpus.append(item.gpus)
            cols.template.append(part.template)
            cols.epochs.append(part.epochs)
            cols.status.append(JOB_STATUSES.index(item.status))
            cols.user.append(cols.name(item.user))
            cols.vc.append(cols.name(item.vc))
            cols.add_id(part.source_id)
    order = _select(cols, window, options.jobs, summary)
    if not len(order):
        raise InputError(f"{', '.join(options.paths)}: no usable job to write (see the problems above)")
    arrivals = _arrivals(cols, order, mapper, options, summary)
    _write(cols, order, arrivals, mapper, options.out, summary)
    return summary


def _select(cols: _Columns, window, jobs: int | None, summary: ImportSummary) -> np.ndarray:
    """Indices of the kept jobs in arrival order (ties in input order)."""
    submit = np.frombuffer(cols.submit, dtype=np.float64)
    order = np.argsort(submit, kind="stable")
    if window is not None and len(order):
        offset = submit[order] - submit[order[0]]
        kept = order[(offset >= window[0]) & (offset < window[1])]
        summary.outside_window = len(order) - len(kept)
        order = kept
    if jobs is not None and len(order) > jobs:
        summary.beyond_jobs = len(order) - jobs
        order = order[:jobs]
    return order


def _arrivals(cols: _Columns, order: np.ndarray, mapper: JobMapper, options: ImportOptions,
              summary: ImportSummary) -> np.ndarray:
    submit = np.frombuffer(cols.submit, dtype=np.float64)[order]
    arrivals = np.round(submit - submit[0], 3)
    template_gangs = np.array([t.gang for t in mapper.templates], dtype=np.int64)
    gangs = template_gangs[np.frombuffer(cols.template, dtype=np.uint16)[order]]
    if options.gpus is not None and int(gangs.max()) > options.gpus:
        raise InputError(f"--gpus {options.gpus}: a job of the trace has a gang of {int(gangs.max())} GPUs")
    work = float(np.dot(gangs, np.frombuffer(cols.iso, dtype=np.float64)[order]))
    logged = float(np.frombuffer(cols.logged_work, dtype=np.float64)[order].sum())
    span = float(arrivals[-1])
    summary.loads["logged (GPUs x logged run time)"] = logged / span if span > 0 else float("inf")
    summary.loads["converted (gang x isolated time)"] = work / span if span > 0 else float("inf")
    if options.load is not None:
        factor = arrival_factor(work, span, options.gpus, options.load)
        arrivals = np.round(arrivals * factor, 3)
        span = float(arrivals[-1])
        summary.loads[f"after --load {options.load:g}"] = offered_load_of_work(work, span, 1)
    if arrivals[-1] > MAX_ARRIVAL_S:
        raise InputError(f"the last arrival is at {arrivals[-1]:g} s, beyond the trace limit "
                         f"{MAX_ARRIVAL_S:g} s: choose a smaller --window or a higher --load")
    return arrivals


def _in_chunks(order: np.ndarray, arrivals: np.ndarray, size: int = 1 << 16):
    """``(job id, column index, arrival)`` in order, converting a chunk at a time."""
    for start in range(0, len(order), size):
        chunk = zip(order[start:start + size].tolist(), arrivals[start:start + size].tolist(), strict=True)
        for offset, (i, arrival) in enumerate(chunk):
            yield start + offset, i, arrival


def _write(cols: _Columns, order: np.ndarray, arrivals: np.ndarray, mapper: JobMapper, out: str,
           summary: ImportSummary) -> None:
    names = list(cols.names)
    path = Path(out)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            os.fchmod(handle.fileno(), 0o644)
            for job_id, i, arrival in _in_chunks(order, arrivals):
                template = mapper.templates[cols.template[i]]
                status = JOB_STATUSES[cols.status[i]]
                origin = JobOrigin(
                    source_id=cols.source_id(i), user=names[cols.user[i]], vc=names[cols.vc[i]], status=status,
                    logged_run_s=cols.logged_run[i], logged_gpus=cols.logged_gpus[i],
                )
                spec = JobSpec(
                    job_id=job_id, model=template.model, initial_batch_size=template.batch_size,
                    total_iterations=cols.epochs[i] * template.iterations_per_epoch, gang=template.gang,
                    mode="static", arrival_s=arrival, origin=origin,
                )
                handle.write(format_line(spec) + "\n")
                summary.statuses[status] += 1
                summary.epochs += cols.epochs[i]
            summary.written = len(order)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
