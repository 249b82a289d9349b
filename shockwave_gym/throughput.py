"""Throughput model: isolated iterations per second by (model, batch size, gang).

The built-in tables (``data/<gpu type>_throughputs.csv``, one per type in
:data:`BUILTIN_GPU_TYPES`) carry the figures measured by the Shockwave/Gavel authors;
:meth:`ThroughputTable.builtin` loads one, V100 by default (the paper's cluster).
:meth:`ThroughputTable.from_gavel_json` reads any Gavel-format
file a user has (nested by worker type; key ``"('<Model> (batch size b)', gang)"``; the
isolated rate is the ``"null"`` entry, other entries are co-location pairs and unused).
"""

from __future__ import annotations

import ast
import csv
import json
import math
import numbers
from importlib import resources
from pathlib import Path

import numpy as np

from shockwave_gym.ascii_numbers import parse_float, parse_int
from shockwave_gym.errors import InputError
from shockwave_gym.jobs import GANG_SIZES, parse_job_type

#: GPU types with a built-in table (``data/<type>_throughputs.csv``).
BUILTIN_GPU_TYPES: tuple[str, ...] = ("k80", "p100", "v100")


class ThroughputError(InputError):
    """A throughput file is malformed, or a configuration has no usable rate."""


#: Longest key of a Gavel throughput file that is parsed at all.
_MAX_KEY_CHARS = 200


#: Isolated rates a table may hold, iterations/s of the whole gang (docs/TRACES.md, "Limits"):
#: besides 0 (cannot run), real rates lie within about 0.05 and 5,000; beyond these bounds a
#: job's duration overflows or rounds to nothing.
MIN_RATE = 1e-3
MAX_RATE = 1e6


def rate_problem(rate: object) -> str | None:
    """What is wrong with ``rate`` as a table's isolated iterations/s (None: nothing): a
    finite number, 0 (the job cannot run) or from :data:`MIN_RATE` to :data:`MAX_RATE`."""
    if isinstance(rate, bool | np.bool_) or not isinstance(rate, numbers.Real) or not math.isfinite(rate) or rate < 0:
        return f"must be a finite number >= 0, got {rate!r}"
    if rate != 0 and not MIN_RATE <= rate <= MAX_RATE:
        return f"must be 0 (cannot run) or from {MIN_RATE:g} to {MAX_RATE:g} iterations/s, got {rate!r}"
    return None


#: Columns of a throughput CSV, in their usual order; a rate is keyed by the first three.
CSV_COLUMNS: tuple[str, ...] = ("model", "batch_size", "gang", "iterations_per_s")


def _csv_rows(text: str, source: str):
    """``(line number, cells)`` of each line of a throughput CSV that is not a comment or blank."""
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            yield line_no, next(csv.reader([line]))
        except csv.Error as exc:
            raise ThroughputError(f"{source}:{line_no}:row: unreadable CSV row: {exc}") from None


def _csv_header(line_no: int, cells: list[str], source: str) -> list[str]:
    names = [cell.strip() for cell in cells]
    missing = [column for column in CSV_COLUMNS if column not in names]
    if missing:
        raise ThroughputError(f"{source}:{line_no}:{missing[0]}: the header lacks column(s) {', '.join(missing)} "
                              f"(expected {','.join(CSV_COLUMNS)}, got {','.join(names)})")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ThroughputError(f"{source}:{line_no}:{twice[0]}: the header names this column more than once")
    return names


def _csv_model(text: str) -> str:
    model = text.strip()
    if not model:
        raise ValueError("must not be empty")
    return model


def _csv_batch_size(text: str) -> int:
    value = parse_int(text)
    if value < 1:
        raise ValueError(f"must be a whole number >= 1, got {text!r}")
    return value


def _csv_gang(text: str) -> int:
    value = parse_int(text)
    if value not in GANG_SIZES:
        raise ValueError(f"must be one of {', '.join(map(str, GANG_SIZES))}, got {text!r}")
    return value


def _csv_rate(text: str) -> float:
    value = parse_float(text)
    problem = rate_problem(value)
    if problem:
        raise ValueError(problem)
    return value


#: How each column of a throughput CSV is read; a ``ValueError`` names the problem.
_CSV_PARSERS = {"model": _csv_model, "batch_size": _csv_batch_size, "gang": _csv_gang,
                "iterations_per_s": _csv_rate}


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _gavel_key(key: str, where: str) -> tuple[str, int]:
    """``"('<job type>', gang)"`` -> ``(job type, gang)``; a gang must be 1, 2, 4 or 8."""
    shape = "must be \"('<Model> (batch size <B>)', <gang>)\""
    if len(key) > _MAX_KEY_CHARS:
        raise ThroughputError(f"{where}: key of {len(key)} characters {shape}")
    try:
        value = ast.literal_eval(key)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ThroughputError(f"{where}: key {key!r} {shape}") from None
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)):
        raise ThroughputError(f"{where}: key {key!r} {shape}")
    gang = value[1]
    if isinstance(gang, bool) or not isinstance(gang, int) or gang not in GANG_SIZES:
        sizes = ", ".join(map(str, GANG_SIZES))
        raise ThroughputError(f"{where}: gang {gang!r} in key {key!r} must be one of {sizes}")
    return value[0], gang


def gavel_rates(data: object, file: str, worker_type: str) -> dict[tuple[str, int, int], float]:
    """Isolated rates of ``worker_type`` in parsed Gavel JSON ``data``, structure checked.

    Layout: ``{worker type: {key: {"null": rate, <co-location key>: [..]}}}``. Job types
    without a batch size (A3C, CycleGAN) are skipped; every other problem raises
    :class:`ThroughputError` naming ``file`` and the key path.
    """
    if not isinstance(data, dict):
        raise ThroughputError(f"{file}: top level must be an object keyed by worker type, got {type(data).__name__}")
    if worker_type not in data:
        raise ThroughputError(f"{file}: no worker type {worker_type!r} (found: {', '.join(sorted(data)) or 'none'})")
    table = data[worker_type]
    if not isinstance(table, dict):
        raise ThroughputError(f"{file}: {worker_type}: must be an object keyed by job type, got {type(table).__name__}")
    rates = {}
    for key, entry in table.items():
        job_type, gang = _gavel_key(key, f"{file}: {worker_type}")
        where = f"{file}: {worker_type} -> {key}"
        if not isinstance(entry, dict) or "null" not in entry:
            raise ThroughputError(f"{where}: must be an object with an isolated 'null' rate")
        try:
            model, batch_size = parse_job_type(job_type)
        except ValueError as exc:
            if "(batch size" not in job_type:
                continue  # models we do not simulate (A3C, CycleGAN) carry no batch size
            raise ThroughputError(f"{where}: {exc}") from None  # e.g. "batch size -32", "batch size ３２"
        rate = entry["null"]
        problem = rate_problem(rate)
        if problem:
            raise ThroughputError(f"{where} -> null: rate {problem}")
        if (model, batch_size, gang) in rates:
            raise ThroughputError(f"{where}: {job_type} on {gang} GPU(s) appears twice")
        rates[(model, batch_size, gang)] = float(rate)
    return rates


class ThroughputTable:
    """Immutable mapping (model, batch size, gang) -> iterations/s of the whole gang."""

    __slots__ = ("_rates", "source")

    def __init__(self, rates: dict[tuple[str, int, int], float], source: str = "<memory>"):
        for key, rate in rates.items():
            problem = rate_problem(rate)
            if problem:
                raise ThroughputError(f"{source}: rate for {key} {problem}")
        self._rates = dict(rates)
        self.source = source

    def __reduce__(self):
        return (ThroughputTable, (self._rates, self.source))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ThroughputTable) and self._rates == other._rates

    def __hash__(self) -> int:
        return hash(frozenset(self._rates.items()))

    def __len__(self) -> int:
        return len(self._rates)

    def has(self, model: str, batch_size: int, gang: int) -> bool:
        """True when the configuration has a positive rate (so it can be scheduled)."""
        return self._rates.get((model, batch_size, gang), 0.0) > 0.0

    def rate(self, model: str, batch_size: int, gang: int) -> float:
        """Iterations/s; raises :class:`ThroughputError` when missing or zero."""
        rate = self._rates.get((model, batch_size, gang))
        if rate is None:
            raise ThroughputError(
                f"no throughput for {model} at batch size {batch_size} on {gang} GPU(s) in {self.source}"
            )
        if rate <= 0.0:
            raise ThroughputError(
                f"{model} at batch size {batch_size} on {gang} GPU(s) has rate 0 in {self.source}: "
                "it cannot be scheduled"
            )
        return rate

    def batch_sizes(self, model: str, gang: int) -> tuple[int, ...]:
        """Batch sizes with a positive rate for (model, gang), ascending."""
        return tuple(sorted(b for (m, b, g), r in self._rates.items() if m == model and g == gang and r > 0))

    def items(self):
        return sorted(self._rates.items())

    # --- constructors ---------------------------------------------------------------------

    @classmethod
    def builtin(cls, gpu_type: str = "v100") -> ThroughputTable:
        """The built-in table of ``gpu_type`` (one of :data:`BUILTIN_GPU_TYPES`)."""
        if gpu_type not in BUILTIN_GPU_TYPES:
            raise ThroughputError(
                f"no built-in throughput table for GPU type {gpu_type!r} "
                f"(built-in: {', '.join(BUILTIN_GPU_TYPES)})"
            )
        text = resources.files("shockwave_gym").joinpath(f"data/{gpu_type}_throughputs.csv").read_text()
        return cls.from_csv_text(text, source=f"built-in {gpu_type.upper()} table")

    @classmethod
    def builtin_v100(cls) -> ThroughputTable:
        """The built-in V100 table: ``builtin("v100")``."""
        return cls.builtin("v100")

    @classmethod
    def from_csv_text(cls, text: str, source: str) -> ThroughputTable:
        """Read our CSV (:data:`CSV_COLUMNS`; ``#`` comment lines and blank lines skipped).

        Every problem raises :class:`ThroughputError` as ``source:line:field: message``, with
        the line counted in the file itself (comment and blank lines included): a value that
        does not parse, a row with too few or too many fields, a key given twice.
        """
        rows = _csv_rows(text, source)
        header = next(rows, None)
        if header is None:
            raise ThroughputError(f"{source}: no header line; expected {','.join(CSV_COLUMNS)}")
        names = _csv_header(*header, source)
        rates: dict[tuple[str, int, int], float] = {}
        first_line: dict[tuple[str, int, int], int] = {}
        for line_no, cells in rows:
            where = f"{source}:{line_no}"
            if len(cells) > len(names):
                raise ThroughputError(f"{where}:row: has {len(cells)} fields, the header {len(names)}")
            if len(cells) < len(names):
                raise ThroughputError(f"{where}:{names[len(cells)]}: missing: the row has {len(cells)} "
                                      f"field(s), the header {len(names)}")
            row = dict(zip(names, cells, strict=True))
            values = []
            for column, parse in _CSV_PARSERS.items():
                try:
                    values.append(parse(row[column]))
                except ValueError as exc:
                    raise ThroughputError(f"{where}:{column}: {exc}") from None
            model, batch_size, gang, rate = values
            key = (model, batch_size, gang)
            if key in first_line:
                raise ThroughputError(f"{where}:model: {model} at batch size {batch_size} on {gang} GPU(s) "
                                      f"is already given on line {first_line[key]}")
            first_line[key], rates[key] = line_no, rate
        return cls(rates, source)

    @classmethod
    def from_gavel_json(cls, path: str | Path, worker_type: str = "v100") -> ThroughputTable:
        """Read a Gavel-format throughput file, using only ``worker_type`` (default ``v100``).

        The structure is checked (:func:`gavel_rates`); every error names the file and the
        key path, e.g. ``f.json: v100 -> "('ResNet-18 (batch size 32)', 1.5)": ...``.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ThroughputError(f"{path}: cannot read throughput JSON: {reason}") from None
        except RecursionError:
            raise ThroughputError(f"{path}: cannot read throughput JSON: nested too deeply") from None
        return cls(gavel_rates(data, str(path), worker_type), str(path))

    @classmethod
    def load(cls, path: str | Path | None) -> ThroughputTable:
        """The built-in table for ``None``; otherwise a Gavel JSON or our CSV by extension."""
        if path is None:
            return cls.builtin_v100()
        path = Path(path)
        if path.suffix == ".csv":
            try:
                return cls.from_csv_text(path.read_text(encoding="utf-8"), str(path))
            except OSError as exc:
                raise ThroughputError(f"{path}: {exc}") from None
        return cls.from_gavel_json(path)


#: The GPU type whose seconds measure a job's progress (isolated time, work done) on every
#: cluster: the paper's V100. On a heterogeneous cluster a job's progress is still counted in
#: isolated seconds of V100 work (docs/HETEROGENEOUS.md, "Progress on a type").
REFERENCE_GPU_TYPE = "v100"


class TypedThroughputs:
    """One :class:`ThroughputTable` per GPU type: the throughput model of a heterogeneous
    cluster. It always holds the reference type (:data:`REFERENCE_GPU_TYPE`), whose table
    defines isolated time; :meth:`table` gives any type's.

    Build it with :meth:`builtin` (the bundled K80/P100/V100 tables), :meth:`from_gavel_json`
    (every worker type of a Gavel-format file) or :meth:`resolve` (what a run uses for a
    cluster, given what the user passed).
    """

    __slots__ = ("_tables",)

    def __init__(self, tables: dict[str, ThroughputTable]):
        if REFERENCE_GPU_TYPE not in tables:
            raise ThroughputError(
                f"a per-type throughput bundle needs the reference {REFERENCE_GPU_TYPE} table "
                f"(it defines isolated time); got types {', '.join(sorted(tables)) or 'none'}"
            )
        for name, table in tables.items():
            if not isinstance(table, ThroughputTable):
                raise TypeError(f"table for {name!r} must be a ThroughputTable, got {type(table).__name__}")
        self._tables = dict(tables)

    def __reduce__(self):
        return (TypedThroughputs, (self._tables,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypedThroughputs) and self._tables == other._tables

    def __hash__(self) -> int:
        return hash(tuple(sorted((t, hash(table)) for t, table in self._tables.items())))

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(sorted(self._tables))

    @property
    def reference(self) -> ThroughputTable:
        """The reference type's table (isolated time is measured on it)."""
        return self._tables[REFERENCE_GPU_TYPE]

    @property
    def source(self) -> str:
        return "; ".join(f"{t}: {self._tables[t].source}" for t in self.types)

    def has_type(self, gpu_type: str) -> bool:
        return gpu_type in self._tables

    def table(self, gpu_type: str) -> ThroughputTable:
        """The table of ``gpu_type``; :class:`ThroughputError` when the bundle has none."""
        table = self._tables.get(gpu_type)
        if table is None:
            raise ThroughputError(
                f"no throughput table for GPU type {gpu_type!r} (have: {', '.join(self.types)})"
            )
        return table

    @classmethod
    def builtin(cls, types: tuple[str, ...] = BUILTIN_GPU_TYPES) -> TypedThroughputs:
        """The built-in tables of ``types`` (plus the reference type's)."""
        wanted = set(types) | {REFERENCE_GPU_TYPE}
        return cls({t: ThroughputTable.builtin(t) for t in sorted(wanted)})

    @classmethod
    def from_gavel_json(cls, path: str | Path) -> TypedThroughputs:
        """Every worker type of a Gavel-format file that we know (:data:`BUILTIN_GPU_TYPES`);
        the file must have the reference type. Other keys (``*_unconsolidated``) are ignored."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ThroughputError(f"{path}: cannot read throughput JSON: {reason}") from None
        except RecursionError:
            raise ThroughputError(f"{path}: cannot read throughput JSON: nested too deeply") from None
        if not isinstance(data, dict):
            raise ThroughputError(f"{path}: top level must be an object keyed by worker type, got {type(data).__name__}")
        found = [t for t in BUILTIN_GPU_TYPES if t in data]
        if REFERENCE_GPU_TYPE not in found:
            raise ThroughputError(f"{path}: no worker type {REFERENCE_GPU_TYPE!r} (found: {', '.join(sorted(data)) or 'none'})")
        return cls({t: ThroughputTable(gavel_rates(data, str(path), t), f"{path} [{t}]") for t in found})

    @classmethod
    def resolve(cls, throughputs, gpu_types: tuple[str, ...]) -> TypedThroughputs:
        """The bundle a run on a cluster of ``gpu_types`` uses.

        ``None``: the built-in tables. A :class:`TypedThroughputs`: itself (it must have every
        type). A single :class:`ThroughputTable` (a user's ``--throughputs`` CSV, say): it is the
        reference V100 table, and the other types come from the built-in tables. A path: a
        Gavel JSON is read with every worker type it has (a cluster type it lacks is an
        error); a CSV is the V100 table, as a single table is.
        """
        if throughputs is None:
            bundle = cls.builtin(tuple(gpu_types))
        elif isinstance(throughputs, TypedThroughputs):
            bundle = throughputs
        elif isinstance(throughputs, ThroughputTable):
            tables = {t: ThroughputTable.builtin(t) for t in gpu_types if t != REFERENCE_GPU_TYPE}
            tables[REFERENCE_GPU_TYPE] = throughputs
            bundle = cls(tables)
        else:
            path = Path(throughputs)
            if path.suffix == ".csv":
                return cls.resolve(ThroughputTable.load(path), gpu_types)
            bundle = cls.from_gavel_json(path)
        missing = [t for t in gpu_types if not bundle.has_type(t)]
        if missing:
            raise ThroughputError(f"no throughput table for GPU type(s) {', '.join(missing)} (have: {', '.join(bundle.types)})")
        return bundle
