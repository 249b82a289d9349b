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
    try:
        handle = open(path, encoding="utf-8-sig")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        yield from _ArrayReader(str(path), handle).elements()


class _ArrayReader:
    """One reading of an open file: the buffer (unread text from ``pos`` on), the physical
    line at ``pos``, and whether the file is exhausted."""

    def __init__(self, file: str, handle):
        self.file, self.handle = file, handle
        self.decoder = json.JSONDecoder()
        self.buffer, self.pos, self.line, self.eof = "", 0, 1, False

    def refill(self) -> bool:
        """Append the next chunk to the unread text; False at the end of the file."""
        if self.eof:
            return False
        try:
            chunk = self.handle.read(CHUNK_CHARS)
        except UnicodeDecodeError as exc:
            raise TraceError(self.file, f"not UTF-8 text: {exc.reason}", self.line) from None
        if not chunk:
            self.eof = True
            return False
        self.buffer = self.buffer[self.pos:] + chunk
        self.pos = 0
        return True

    def next_char(self, state: str) -> str:
        """The next character that is not whitespace (lines counted on the way), reading
        chunks as needed; the file ending first is an error worded for ``state``."""
        while True:
            buffer, pos = self.buffer, self.pos
            while pos < len(buffer) and buffer[pos] in _WHITESPACE:
                if buffer[pos] == "\n":
                    self.line += 1
                pos += 1
            self.pos = pos
            if pos < len(buffer):
                return buffer[pos]
            if not self.refill():
                raise TraceError(self.file, "ends inside the JSON array (no closing ']')" if state != "open"
                                 else "is empty: expected a JSON array", self.line)

    def decode(self, index: int) -> tuple[object, int] | None:
        """Element ``index``, starting at ``pos``, and the position after it; None when it
        may go on past the text read so far (more was read: decode it again)."""
        try:
            element, end = self.decoder.raw_decode(self.buffer, self.pos)
        except json.JSONDecodeError as exc:
            if not self.eof and len(self.buffer) - self.pos < MAX_ELEMENT_CHARS and self.refill():
                return None
            where = self.line + self.buffer.count("\n", self.pos, exc.pos)
            raise TraceError(self.file, f"not valid JSON: {exc.msg} (element {index})", where) from None
        except RecursionError:
            raise TraceError(self.file, f"JSON nested too deeply (element {index})", self.line) from None
        if end == len(self.buffer) and not self.eof and self.refill():
            return None  # a number may go on in the next chunk: decode it again whole
        return element, end

    def elements(self) -> Iterator[tuple[int, int, object]]:
        """``(line, index, element)`` for each element, checking the array's punctuation."""
        index = 0
        state = "open"  # expecting "[", then "value" / "comma-or-close"
        while True:
            char = self.next_char(state)
            if state == "open":
                if char != "[":
                    raise TraceError(self.file, f"must hold one JSON array, starts with {char!r}", self.line)
                self.pos += 1
                state = "first"
                continue
            if state in ("comma-or-close", "first") and char == "]":
                self.pos += 1
                rest = self.buffer[self.pos:].strip() + self.handle.read(CHUNK_CHARS).strip()
                if rest:
                    raise TraceError(self.file, "holds text after the closing ']'", self.line)
                return
            if state == "comma-or-close":
                if char != ",":
                    raise TraceError(self.file, f"expected ',' or ']' between array elements, got {char!r}",
                                     self.line)
                self.pos += 1
                state = "value"
                continue
            decoded = self.decode(index)
            if decoded is None:
                continue
            element, end = decoded
            yield self.line, index, element
            self.line += self.buffer.count("\n", self.pos, end)
            self.pos, index, state = end, index + 1, "comma-or-close"
