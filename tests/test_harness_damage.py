"""Damaged cell records: a resumed run recomputes exactly the damaged cells, reuses the
others byte for byte, and warns once per damaged cell naming its file."""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from helpers import harness_agents as helpers

from shockwave_gym.cli import main
from shockwave_gym.harness import HarnessWarning, backends, evaluate

AGENT = "test-random"  # uses the seed: one cell per seed


def _drop(field: str):
    def damage(record: dict) -> dict:
        del record[field]
        return record
    return damage


def _row(change):
    def damage(record: dict) -> dict:
        change(record["row"])
        return record
    return damage


def _key(field: str, value):
    def damage(record: dict) -> dict:
        record["key"][field] = value
        return record
    return damage


def _short_result(record: dict) -> dict:
    record["result"]["completion_s"] = record["result"]["completion_s"][:-1]
    return record


#: name -> how the file is damaged: replacement text, or a change to the parsed record.
#: "copied from another cell" is done by the test itself (wrong seed).
DAMAGES = {
    "a JSON list": "[]",
    "a JSON number": "42",
    "JSON null": "null",
    "truncated JSON": None,
    "no result": _drop("result"),
    "no row": _drop("row"),
    "row={}": _row(lambda row: row.clear()),
    "a row field missing": _row(lambda row: row.pop("avg_jct_s")),
    "a row field mistyped": _row(lambda row: row.update(makespan_s="fast")),
    "a row seed mistyped": _row(lambda row: row.update(seed="0")),
    "another agent's key": _key("agent", "fifo"),
    "another trace's key": _key("trace", "canonical-analogue-120"),
    "a short result list": _short_result,
}
#: Damaged cells: one per entry above, plus one holding another seed's record.
DAMAGED = len(DAMAGES) + 1
SEEDS = tuple(range(DAMAGED + 3))  # three cells stay intact


def cell_files(out: Path) -> dict[int, Path]:
    files = sorted((out / "cells").rglob("*.json"))
    return {int(path.name[len("seed"):].split("-")[0]): path for path in files}


def damage(files: dict[int, Path]) -> dict[Path, str]:
    """Damage the first DAMAGED cells; returns path -> kind of damage."""
    damaged = {}
    for seed, (kind, how) in zip(SEEDS, DAMAGES.items(), strict=False):
        path = files[seed]
        text = path.read_text()
        if how is None:
            path.write_text(text[: len(text) // 2])
        elif isinstance(how, str):
            path.write_text(how)
        else:
            path.write_text(json.dumps(how(json.loads(text))))
        damaged[path] = kind
    copied = files[len(DAMAGES)]
    copied.write_bytes(files[SEEDS[-1]].read_bytes())  # a whole record, of another seed
    damaged[copied] = "another seed's record"
    return damaged


def test_each_kind_of_damage_is_recomputed_alone_and_named_in_one_warning(tmp_path, monkeypatch):
    out = tmp_path / "out"
    first = evaluate(AGENT, helpers.TRACE, seeds=SEEDS, workers=1, out=out, progress=False, figures=False)
    files = cell_files(out)
    assert sorted(files) == list(SEEDS)
    damaged = damage(files)
    assert len(damaged) == DAMAGED
    intact = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files.values() if p not in damaged}
    assert len(intact) == 3

    ran = []
    real_run_cell = backends.run_cell
    monkeypatch.setattr(backends, "run_cell", lambda cell: ran.append(cell.seed) or real_run_cell(cell))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = evaluate(AGENT, helpers.TRACE, seeds=SEEDS, workers=1, out=out, progress=False, figures=False)

    messages = [str(w.message) for w in caught if issubclass(w.category, HarnessWarning)]
    assert len(messages) == DAMAGED, messages
    for path, kind in damaged.items():
        naming = [m for m in messages if str(path) in m]
        assert len(naming) == 1, (kind, messages)
        assert "is not reused" in naming[0] and "recomputing" in naming[0], naming
    assert sorted(ran) == sorted(s for s, p in files.items() if p in damaged)  # exactly those
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in intact} == intact
    # every record whole again, and the results are those of the first run
    assert cell_files(out) == files
    columns = ["seed", *helpers.COMPARED]
    pd.testing.assert_frame_equal(first[columns], again[columns], check_exact=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HarnessWarning)  # nothing damaged is left
        evaluate(AGENT, helpers.TRACE, seeds=SEEDS, workers=1, out=out, progress=False, figures=False)


@pytest.mark.parametrize("text", ["[]", "42", "null", '{"key_hash": "'])
def test_cli_names_the_damaged_file_in_one_warning_line_and_exits_0(tmp_path, text):
    out = tmp_path / "out"
    argv = ["compare", "--agents", "fifo", "--traces", helpers.TRACE, "--workers", "1",
            "--out", str(out), "--no-figures", "--quiet"]
    assert main(argv) == 0
    (path,) = cell_files(out).values()
    path.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    lines = [line for line in err.getvalue().splitlines() if "warning" in line]
    assert len(lines) == 1 and lines[0].startswith(f"shockwave-gym: warning: cell record {path} is not reused")
    assert "Traceback" not in err.getvalue()
    assert json.loads(path.read_text())["row"]["agent"] == "fifo"


def test_a_record_saved_before_the_fair_share_metrics_is_recomputed_with_a_warning(tmp_path):
    from shockwave_gym.harness.cell_schema import seal
    from shockwave_gym.harness.validate import ADDED_METRICS

    out = tmp_path / "out"
    first = evaluate(AGENT, helpers.TRACE, seeds=0, workers=1, out=out, progress=False, figures=False)
    (path,) = cell_files(out).values()
    record = json.loads(path.read_text())
    for key in ADDED_METRICS:
        record["row"].pop(key)
    seal(record)  # a sealed record without the new keys (an unsealed one is refused for its digest first)
    path.write_text(json.dumps(record))
    with pytest.warns(HarnessWarning, match="saved before the fair-share metrics were added"):
        again = evaluate(AGENT, helpers.TRACE, seeds=0, workers=1, out=out, progress=False, figures=False)
    assert set(ADDED_METRICS) <= set(json.loads(path.read_text())["row"])
    assert again["rho_mean"].tolist() == first["rho_mean"].tolist()
    assert again["avg_jct_s"].tolist() == first["avg_jct_s"].tolist()
