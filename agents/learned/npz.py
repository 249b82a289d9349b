"""Reading a policy's ``.npz`` weights without trusting its sizes.

An ``.npz`` is a zip of ``.npy`` members, each with a small header declaring its dtype and
shape. :func:`read_declared` reads only those headers first and refuses, before any array
is read, a member that is not expected, is not a float array of the expected shape, or whose
stored size disagrees with its header (a zip bomb claiming 2^30 values is refused after
reading a few hundred bytes). Then it reads the arrays (never unpickling) and refuses
non-finite or absurd values (``|w| > MAX_ABS_WEIGHT``).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

#: The largest weight magnitude a policy may hold: trained weights are O(1), and products
#: of weights beyond this overflow float32 in the forward pass.
MAX_ABS_WEIGHT = 1e30
#: Bytes an .npy header may take (numpy writes 64-aligned headers of ~128 bytes).
_MAX_HEADER = 65_536


def _header(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[np.dtype, tuple, bool, int]:
    """(dtype, shape, fortran order, header length) of one member, from its first bytes."""
    with archive.open(info) as stream:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream, max_header_size=_MAX_HEADER)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream, max_header_size=_MAX_HEADER)
        else:
            raise ValueError(f"unknown .npy version {version}")
        return dtype, shape, fortran, stream.tell()


def read_declared(weights_path: Path, expected: dict[str, tuple[int, ...]], error) -> dict[str, np.ndarray]:
    """The arrays of ``weights_path`` named and shaped as ``expected`` (name -> shape),
    checked as the module says; ``error(field, message, fit)`` builds the exception to raise
    (``fit``: the array does not fit the described network)."""
    with zipfile.ZipFile(weights_path) as archive:
        members = {}
        for info in archive.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if name not in expected:
                raise error(name, "unexpected array", True)
            if name in members:
                raise error(name, "stored twice")
            try:
                dtype, shape, _, header_bytes = _header(archive, info)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
                raise error(name, f"not a plain .npy array ({exc})") from None
            if dtype.kind != "f" or dtype.hasobject:
                raise error(name, f"must hold floats, got dtype {dtype}")
            if tuple(shape) != expected[name]:
                raise error(name, f"declared shape {tuple(shape)}, expected {expected[name]}", True)
            if info.file_size != header_bytes + dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
                raise error(name, f"stored size {info.file_size:,} bytes does not match its declared shape")
            members[name] = info
        missing = sorted(set(expected) - set(members))
        if missing:
            raise error(missing[0], "missing", True)
        state = {}
        for name, info in members.items():
            with archive.open(info) as stream:
                value = np.lib.format.read_array(stream, allow_pickle=False, max_header_size=_MAX_HEADER)
            finite = np.isfinite(value)
            if not finite.all():
                bad = int(value.size - np.count_nonzero(finite))
                raise error(name, f"{bad} non-finite value(s) (NaN or inf); weights must be finite")
            if value.size and float(np.max(np.abs(value))) > MAX_ABS_WEIGHT:
                raise error(name, f"holds |w| = {float(np.max(np.abs(value))):.3g}, beyond {MAX_ABS_WEIGHT:g}: "
                                  "not the weights of a trained network")
            state[name] = value
    return state
