"""Every file of the malformed-trace corpus fails with the documented file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave_gym.errors import TraceError
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import load_trace, validate_trace

CORPUS = Path(__file__).resolve().parent / "malformed_traces"
EXPECTED = json.loads((CORPUS / "EXPECTED.json").read_text(encoding="utf-8"))["cases"]


def _options(case: dict) -> dict:
    throughputs = case.get("throughputs")
    return {
        "throughputs": ThroughputTable.load(CORPUS / throughputs) if throughputs else None,
        "gpus": case.get("gpus"),
    }


def test_corpus_is_large_and_fully_listed():
    files = {p.name for p in CORPUS.iterdir() if p.is_file() and p.suffix in (".trace", ".jsonl")}
    assert files == set(EXPECTED)
    assert len(files) >= 15


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_load_reports_file_line_and_field(name):
    case = EXPECTED[name]
    path = CORPUS / name
    with pytest.raises(TraceError) as caught:
        load_trace(path, **_options(case))
    error = caught.value
    assert type(error) is TraceError
    assert error.file == str(path)
    assert (error.line, error.field) == (case["line"], case["field"]), str(error)
    assert case.get("message_contains", "") in error.message
    where = f"{path}:{case['line']}" if case["line"] is not None else str(path)
    assert str(error).startswith(where + (f":{case['field']}:" if case["field"] else ":"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_validate_lists_the_same_first_problem(name):
    case = EXPECTED[name]
    problems = validate_trace(CORPUS / name, **_options(case))
    assert problems, "validate_trace found nothing"
    assert all(type(p) is TraceError for p in problems)
    assert (problems[0].line, problems[0].field) == (case["line"], case["field"])


def test_corpus_traces_load_when_the_cause_is_removed():
    """The gpus / throughput cases are valid without the constraint that breaks them."""
    assert load_trace(CORPUS / "gang_over_gpus.trace").num_jobs == 2
    assert load_trace(CORPUS / "gns_later_size_missing.trace").jobs[0].mode == "gns"
