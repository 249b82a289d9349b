"""Huge traces are refused early: the job-count limit before any line is parsed, a bad
line without reading what follows it, both in a fraction of a second and a few MB."""

from __future__ import annotations

import tracemalloc

import pytest

from shockwave_gym.errors import TraceError
from shockwave_gym.traces import load_trace, validate_trace
from shockwave_gym.traces.validation import MAX_LINE_BYTES, MAX_TRACE_JOBS


def _tsv(iterations: int = 1, arrival: float = 5) -> str:
    return "\t".join(["ResNet-18 (batch size 32)", "", "", "", "1", str(iterations), "1", "static", "1", "-1", "0",
                      str(arrival)]) + "\n"


@pytest.fixture(scope="module")
def million_lines(tmp_path_factory):
    """1,000,000 lines: the first over the per-job epoch limit, the others valid."""
    path = tmp_path_factory.mktemp("huge") / "million.trace"
    with open(path, "w") as handle:
        handle.write(_tsv(10**15, 0))
        handle.write(_tsv() * 999_999)
    return path


def _refusal(call, path):
    tracemalloc.start()
    with pytest.raises(TraceError) as caught:
        call(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return caught.value, peak


def test_a_million_lines_are_refused_at_the_job_limit_before_parsing(million_lines):
    error, peak = _refusal(lambda p: load_trace(p, gpus=4), million_lines)
    assert error.line == MAX_TRACE_JOBS + 1 and f"at most {MAX_TRACE_JOBS:,}" in str(error)
    assert peak < 50 * 2**20, peak  # the file is never held: < 2 MB measured
    errors = validate_trace(million_lines, gpus=4)  # validate-trace says the same, as fast
    assert [e.line for e in errors] == [MAX_TRACE_JOBS + 1]


def test_a_bad_first_line_stops_reading(tmp_path):
    path = tmp_path / "first_bad.trace"
    with open(path, "w") as handle:
        handle.write(_tsv(10**15, 0))
        handle.write(_tsv() * (MAX_TRACE_JOBS - 1))  # just within the job limit
    error, peak = _refusal(lambda p: load_trace(p, gpus=4), path)
    assert error.line == 1 and error.field == "total_iterations"
    assert peak < 5 * 2**20, peak


def test_the_job_limit_is_exact(tmp_path):
    path = tmp_path / "limit.trace"
    path.write_text("\n" + _tsv() * MAX_TRACE_JOBS + "\n")  # blank lines are not jobs
    assert validate_trace(path, gpus=4) == []
    path.write_text("\n" + _tsv() * (MAX_TRACE_JOBS + 1))
    (error,) = validate_trace(path, gpus=4)
    assert error.line == MAX_TRACE_JOBS + 2


def test_a_line_without_end_is_refused_unread(tmp_path):
    path = tmp_path / "one_line.trace"
    path.write_bytes(b"x" * (50 * MAX_LINE_BYTES))
    error, peak = _refusal(load_trace, path)
    assert error.line == 1 and "longer than" in str(error) and peak < 5 * 2**20
