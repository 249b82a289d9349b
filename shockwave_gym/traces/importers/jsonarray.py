"""An incremental reader of one JSON array of objects (Philly's ``cluster_job_log``).

The file is read in chunks of :data:`CHUNK_CHARS`; each element is decoded by
``json.JSONDecoder.raw_decode`` as soon as it is whole, so memory holds one chunk and one
element, never the file. Each element comes with the physical line it starts on and its
index. A syntax error ends the reading with a :class:`~shockwave_gym.errors.TraceError`
naming the line (the rest of an array cannot be found reliably after one).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from shockwave_gym.errors import InputError, TraceError

#: Characters read at a time.
CHUNK_CHARS = 1 << 20
#: Largest single element accepted (characters): a bound on the buffer.
MAX_ELEMENT_CHARS = 64 << 20
_WHITESPACE = " \t\n\r"


def iter_array(path: str | Path) -> Iterator[tuple[int, int, object]]:
    """``(line, index, element)`` for each element of the JSON array in ``path``."""
    file = str(path)
    decoder = json.JSONDecoder()
    try:
        handle = open(path, encoding="utf-8-sig")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        buffer, pos, line, eof = "", 0, 1, False
        index = 0
        state = "open"  # expecting "[", then "value" / "comma-or-close"

        def refill() -> bool:
            nonlocal buffer, pos, eof
            if eof:
                return False
            try:
                chunk = handle.read(CHUNK_CHARS)
            except UnicodeDecodeError as exc:
                raise TraceError(file, f"not UTF-8 text: {exc.reason}", line) from None
            if not chunk:
                eof = True
                return False
            buffer = buffer[pos:] + chunk
            pos = 0
            return True

        while True:
            while pos < len(buffer) and buffer[pos] in _WHITESPACE:
                if buffer[pos] == "\n":
                    line += 1
                pos += 1
            if pos >= len(buffer):
                if refill():
                    continue
                raise TraceError(file, "ends inside the JSON array (no closing ']')" if state != "open"
                                 else "is empty: expected a JSON array", line)
            char = buffer[pos]
            if state == "open":
                if char != "[":
                    raise TraceError(file, f"must hold one JSON array, starts with {char!r}", line)
                pos += 1
                state = "first"
                continue
            if state in ("comma-or-close", "first") and char == "]":
                pos += 1
                rest = buffer[pos:].strip() + handle.read(CHUNK_CHARS).strip()
                if rest:
                    raise TraceError(file, "holds text after the closing ']'", line)
                return
            if state == "comma-or-close":
                if char != ",":
                    raise TraceError(file, f"expected ',' or ']' between array elements, got {char!r}", line)
                pos += 1
                state = "value"
                continue
            try:
                element, end = decoder.raw_decode(buffer, pos)
            except json.JSONDecodeError as exc:
                if not eof and len(buffer) - pos < MAX_ELEMENT_CHARS and refill():
                    continue
                where = line + buffer.count("\n", pos, exc.pos)
                raise TraceError(file, f"not valid JSON: {exc.msg} (element {index})", where) from None
            except RecursionError:
                raise TraceError(file, f"JSON nested too deeply (element {index})", line) from None
            if end == len(buffer) and not eof and refill():
                continue  # a number may go on in the next chunk: decode it again whole
            yield line, index, element
            line += buffer.count("\n", pos, end)
            pos, index, state = end, index + 1, "comma-or-close"
