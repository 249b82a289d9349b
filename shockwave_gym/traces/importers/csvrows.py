"""Streaming CSV rows with physical line numbers, for the CSV datasets.

A file may start with a header naming its columns (Helios, Acme) or give them by position in
the order its dataset's README lists them (Alibaba PAI's tables have no header). A header
is recognised when its first row names every required column. Rows are read one at a time.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from shockwave_gym.errors import InputError, TraceError
from shockwave_gym.traces.importers.records import RowProblem

#: Largest CSV field read (characters); longer ones are an error naming the line.
MAX_FIELD_CHARS = 1 << 16


def first_row(path: str | Path) -> list[str]:
    """The first row of a CSV file (for telling tables apart), ``[]`` if empty."""
    with _open(path) as handle:
        for row in csv.reader(handle):
            return row
    return []


def _open(path: str | Path):
    try:
        return open(path, newline="", encoding="utf-8-sig")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def read_csv(
    path: str | Path, columns: tuple[str, ...], required: tuple[str, ...]
) -> Iterator[tuple[int, dict[str, str]] | RowProblem]:
    """``(line, {column: text})`` for each data row of ``path``, or a :class:`RowProblem`.

    ``columns`` is the dataset's column order for a file without a header; ``required`` the
    columns the adapter reads. A header missing a required column is a :class:`TraceError`.
    """
    file = str(path)
    csv.field_size_limit(MAX_FIELD_CHARS)
    with _open(path) as handle:
        reader = csv.reader(handle)
        names: list[str] | None = None
        line = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except (csv.Error, UnicodeDecodeError) as exc:
                yield RowProblem(file, reader.line_num or line + 1, "row", f"unreadable CSV row: {exc}")
                line = reader.line_num
                continue
            line = reader.line_num
            if not row or not any(cell.strip() for cell in row):
                continue
            if names is None:
                stripped = [cell.strip() for cell in row]
                if set(required) <= set(stripped):
                    names = stripped
                    continue
                if any(cell in columns for cell in stripped):
                    missing = [c for c in required if c not in stripped]
                    raise TraceError(file, f"header lacks column(s) {', '.join(missing)}", line, missing[0])
                names = list(columns)
            if len(row) != len(names):
                yield RowProblem(file, line, "row", f"has {len(row)} fields, the header {len(names)}")
                continue
            yield line, dict(zip(names, row, strict=True))
        if names is None:
            raise TraceError(file, "holds no rows")
