"""Stored cells that look plausible but were edited, or written by an older schema: a resumed
run (compare, leaderboard) recomputes them with one warning naming the file, and the
leaderboard counts them as run."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.harness import evaluate
from shockwave_gym.harness.api import DamagedCellWarning
from shockwave_gym.harness.cell_schema import CELL_SCHEMA, digest, range_problem, seal

TRACE = "teaching-12"


def _cells(out: Path) -> list[Path]:
    return sorted((out / "cells").rglob("*.json"))


def _edit(path: Path, change, *, reseal: bool) -> None:
    record = json.loads(path.read_text())
    change(record)
    if reseal:  # a careful editor recomputes the digest: the range checks must still catch it
        seal(record)
    path.write_text(json.dumps(record))


def _halve_jct(record):
    record["row"]["avg_jct_s"] *= 0.5


def _set(field, value):
    return lambda record: record["row"].update({field: value})


def _schema_1(record):
    record["schema"] = 1
    record["digest"] = digest(record)


def _old_schema(record):
    del record["schema"], record["digest"]


#: name -> (edit, reseal: whether the digest is recomputed after it, words of the warning)
TAMPERING = {
    "avg_jct_s=1.0": (_set("avg_jct_s", 1.0), False, "digest"),
    "worst_ftf=-5": (_set("worst_ftf", -5), False, "digest"),
    "utilization=7.0": (_set("utilization", 7.0), False, "digest"),
    "avg_jct_s x0.5": (_halve_jct, False, "digest"),
    "worst_ftf=-5 resealed": (_set("worst_ftf", -5), True, "'worst_ftf' is -5, outside (0, inf]"),
    "worst_ftf=0 resealed": (_set("worst_ftf", 0.0), True, "'worst_ftf' is 0.0, outside (0, inf]"),
    "utilization=7.0 resealed": (_set("utilization", 7.0), True, "'utilization' is 7.0, outside [0, 1]"),
    "unfair_fraction=-0.1 resealed": (_set("unfair_fraction", -0.1), True, "'unfair_fraction'"),
    "avg_jct_s=0 resealed": (_set("avg_jct_s", 0.0), True, "'avg_jct_s' is 0.0"),
    "makespan_s=-1 resealed": (_set("makespan_s", -1.0), True, "'makespan_s'"),
    "old schema": (_old_schema, False, f"no schema version, this version reads schema {CELL_SCHEMA}"),
    "schema 1": (_schema_1, False, f"schema 1, this version reads schema {CELL_SCHEMA}"),
    "digest removed": (lambda r: r.pop("digest"), False, "no content digest"),
}


@pytest.mark.parametrize("name", sorted(TAMPERING))
def test_tampered_cell_is_recomputed_with_a_warning_naming_it(tmp_path, name):
    edit, reseal, words = TAMPERING[name]
    first = evaluate("fifo", TRACE, seeds=0, workers=1, out=tmp_path, progress=False, figures=False)
    (path,) = _cells(tmp_path)
    original = path.read_bytes()
    _edit(path, edit, reseal=reseal)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = evaluate("fifo", TRACE, seeds=0, workers=1, out=tmp_path, progress=False, figures=False)
    messages = [str(w.message) for w in caught if issubclass(w.category, DamagedCellWarning)]
    assert len(messages) == 1 and str(path) in messages[0] and words in messages[0], messages
    assert again.attrs["run_now"] == set(again["key_hash"])  # recomputed, not reused
    assert again["avg_jct_s"].tolist() == first["avg_jct_s"].tolist()
    record = json.loads(path.read_text())
    assert record["schema"] == CELL_SCHEMA and record["digest"] == digest(record)
    assert json.loads(original)["row"]["avg_jct_s"] == record["row"]["avg_jct_s"]


def test_an_untouched_cell_is_reused(tmp_path):
    evaluate("fifo", TRACE, seeds=0, workers=1, out=tmp_path, progress=False, figures=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedCellWarning)
        again = evaluate("fifo", TRACE, seeds=0, workers=1, out=tmp_path, progress=False, figures=False)
    assert again.attrs["run_now"] == set()


def test_the_digest_covers_keys_added_later():
    record = seal({"key_hash": "k", "key": {"a": (1, 2)}, "row": {"avg_jct_s": 5.0}, "result": {}})
    assert record["digest"] == digest(json.loads(json.dumps(record)))  # stable through the JSON round trip
    record["row"]["rho_mean"] = 0.9  # a metric this version does not list
    assert record["digest"] != digest(record)
    assert range_problem({"rho_mean": 0.5, "rho_p95": 2.0}) is None  # rho may be below 1
    assert "rho_mean" in range_problem({"rho_mean": -0.5})
    assert "rho_p95" in range_problem({"rho_p95": float("inf")})


def test_leaderboard_prints_the_warning_and_counts_the_cell_as_run(tmp_path, capsys):
    out = tmp_path / "lb"
    argv = ["leaderboard", "--split", "validation", "--suites", "small-light", "--agents", "fifo", "--workers", "1",
            "--out", str(out), "--quiet"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert first.startswith("5 cells (5 run now)"), first
    paths = _cells(out)
    _edit(paths[0], _halve_jct, reseal=False)
    _edit(paths[1], _old_schema, reseal=False)
    assert main(argv) == 0
    captured = capsys.readouterr()
    warned = [line for line in captured.err.splitlines() if line.startswith("shockwave-gym: warning: cell record")]
    assert len(warned) == 2 and str(paths[0]) in warned[0] + warned[1] and str(paths[1]) in warned[0] + warned[1]
    assert captured.out.startswith("5 cells (2 run now)"), captured.out


def test_shares_of_jobs_may_be_zero_and_at_most_one():
    """``rho_over_1_05`` and ``gang_ftf_over_1_05`` are shares of jobs: 0 (no job above the
    threshold, the common case for a fair schedule) is valid, above 1 is not."""
    assert range_problem({"rho_over_1_05": 0.0, "rho_over_1_25": 0.0, "gang_ftf_over_1_05": 0.0,
                          "unfair_fraction": 0.0}) is None
    assert "rho_over_1_25" in range_problem({"rho_over_1_25": 1.5})
    assert "gang_ftf_over_1_05" in range_problem({"gang_ftf_over_1_05": -0.1})
    assert "rho_max" in range_problem({"rho_max": 0.0})  # a ratio of times stays > 0
