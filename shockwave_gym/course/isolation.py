"""Run one submission in a fresh child process with limits, and read back its answers.

:func:`run_isolated` starts ``python -I`` on :mod:`shockwave_gym.course.child` (a new
interpreter, not a fork of the grader: none of the grader's memory, hidden cases or baseline
figures is in the child), in a new session, in an empty scratch directory that is its home
and temp directory, with an environment of a few fixed variables and an argv of the child's
path only. The request (the submission's code and the instances to solve, as data) goes on
the child's stdin; its answers come back on a pipe the grader opened for it; everything the
submission prints goes to a file that the grader shows as its output and never parses.

Whatever the child does (exits, is killed by a signal, passes its time or memory limit,
returns nothing readable) comes back as one line in :attr:`ChildRun.failure`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CHILD = Path(__file__).with_name("child.py")
#: The most bytes of answers a child may send back.
MAX_RESULT_BYTES = 64 * 1024 * 1024
#: The largest limits a grader may set: a day per submission, 1 TB of address space (beyond
#: what the operating system's limits can hold for some of them).
MAX_WALL_S = 86_400.0
MAX_MEMORY_MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Per-submission limits: wall-clock seconds (enforced by the grader), address space (MB),
    CPU seconds and file size (MB), set by the child on itself before the submission runs."""

    wall_s: float = 120.0
    memory_mb: int = 2048
    file_mb: int = 64
    output_chars: int = 4000

    def __post_init__(self) -> None:
        from shockwave_gym.config import require_finite, require_positive_int
        from shockwave_gym.errors import InputError

        require_finite(self.wall_s, "time limit (s)", low=0.0, low_inclusive=False, high=MAX_WALL_S)
        for name, value, most in (("memory limit (MB)", self.memory_mb, MAX_MEMORY_MB),
                                  ("file limit (MB)", self.file_mb, MAX_MEMORY_MB),
                                  ("output limit (characters)", self.output_chars, None)):
            require_positive_int(value, name)
            if most is not None and value > most:
                raise InputError(f"{name} must be <= {most}, got {value!r}")

    @property
    def cpu_s(self) -> int:
        return max(1, math.ceil(self.wall_s))

    def data(self) -> dict:
        return {"memory_mb": self.memory_mb, "cpu_s": self.cpu_s, "file_mb": self.file_mb}


@dataclass
class ChildRun:
    """What came back from one child: its answers document, or the one-line failure."""

    document: dict | None
    failure: str | None
    output: str
    elapsed_s: float


def child_environment(scratch: str) -> dict[str, str]:
    """The child's whole environment: nothing of the grader's."""
    return {"PATH": os.defpath, "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _read_all(fd: int, into: list) -> None:
    chunks, size = [], 0
    with os.fdopen(fd, "rb") as pipe:
        while chunk := pipe.read(1 << 16):
            size += len(chunk)
            if size > MAX_RESULT_BYTES:
                into.append(None)
                return
            chunks.append(chunk)
    into.append(b"".join(chunks))


def _ended(origin: str, returncode: int, limits: Limits) -> str:
    if returncode >= 0:
        return (f"{origin}: the submission ended the grading process (exit status {returncode}) "
                "before its answers were recorded")
    number = -returncode
    name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"
    if number == signal.SIGXCPU:
        return f"{origin}: stopped at its CPU-time limit of {limits.cpu_s} s"
    if number == signal.SIGXFSZ:
        return f"{origin}: stopped for writing a file over {limits.file_mb} MB"
    return (f"{origin}: the grading process was killed by {name} (a crash, a signal the submission sent, "
            f"or over the memory limit of {limits.memory_mb} MB)")


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _output(path: Path, limit: int) -> str:
    with open(path, "rb") as stream:
        data = stream.read(4 * limit + 4)
    text = data.decode("utf-8", errors="replace")
    if len(text) > limit or path.stat().st_size > len(data):
        text = text[:limit] + f"\n... (output cut at {limit} characters)"
    return text


def run_isolated(request: dict, origin: str, limits: Limits) -> ChildRun:
    """Run the child on ``request`` (lab, code, entry, payload: public data only)."""
    private = tempfile.mkdtemp(prefix="shockwave-grade-")
    scratch = tempfile.mkdtemp(prefix="shockwave-submission-")
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    try:
        out_path = Path(private) / "output.txt"
        with open(out_path, "wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-I", str(CHILD)], stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                cwd=scratch, env=child_environment(scratch), pass_fds=(write_fd,), close_fds=True,
                start_new_session=True)
        result_fd = write_fd  # pass_fds keeps the number in the child
        os.close(write_fd)
        write_fd = -1
        received: list = []
        reader = threading.Thread(target=_read_all, args=(read_fd, received), daemon=True)
        read_fd = -1  # the reader owns and closes it
        reader.start()
        body = json.dumps({**request, "result_fd": result_fd, "limits": limits.data()}).encode()
        try:
            process.stdin.write(body)
            process.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        failure = None
        try:
            returncode = process.wait(timeout=max(0.0, limits.wall_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            _kill(process)
            failure = f"{origin}: stopped at the time limit of {limits.wall_s:g} s (an endless loop, or too slow)"
        except BaseException:  # the grader is interrupted: the child (in its own session) goes too
            _kill(process)
            raise
        else:
            _kill(process)  # anything the submission left running in its session
            if returncode != 0:
                failure = _ended(origin, returncode, limits)
        reader.join(timeout=5.0)
        document = None
        if failure is None:
            document, failure = _parse(received[0] if received else None, origin)
        return ChildRun(document, failure, _output(out_path, limits.output_chars), time.monotonic() - started)
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _parse(data: bytes | None, origin: str) -> tuple[dict | None, str | None]:
    bad = f"{origin}: the grading process returned no readable answers"
    if data is None:
        return None, bad + " (too large, or never closed)"
    if not data:
        return None, (f"{origin}: the submission ended the grading process (exit status 0) before its answers "
                      "were recorded")
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None, bad
    if not isinstance(document, dict) or not isinstance(document.get("refused"), list):
        return None, bad
    if document.get("load_error") is not None:
        error = document["load_error"]
        return None, str(error) if isinstance(error, str) else bad
    if not isinstance(document.get("answers"), dict):
        return None, bad
    return document, None
