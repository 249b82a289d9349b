"""Bad input to the trace tools: ``generate-trace --name``, ``import-trace`` (``--window``,
a file given twice, an ``--out`` whose extension names another format) and throughput CSVs.
Each must exit 2 with one stderr line naming the flag, or the file, line and field; the good
paths next to them must still work and give what they gave before.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.throughput import ThroughputError, ThroughputTable
from shockwave_gym.traces import load_trace, validate_trace

DATA = Path(__file__).resolve().parent / "data" / "real_traces"
HELIOS = str(DATA / "helios_cluster_log.csv")
PAI_JOBS, PAI_TASKS = str(DATA / "pai_job_table.csv"), str(DATA / "pai_task_table.csv")
HEADER = "model,batch_size,gang,iterations_per_s\n"


def _one_error(capsys, stdout: str | None = None) -> str:
    """The single stderr line of a refused command (and, if given, its whole stdout)."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, lines
    assert stdout is None or captured.out == stdout
    assert lines[0].startswith("shockwave-gym: error: ")
    return lines[0]


# --- generate-trace --name ---------------------------------------------------------------


def test_name_that_the_file_cannot_keep_is_refused(tmp_path, capsys):
    out = tmp_path / "n4.jsonl"
    assert main(["generate-trace", "--jobs", "4", "--seed", "1", "--name", "mytrace", "--out", str(out)]) == 2
    line = _one_error(capsys)
    assert "--name 'mytrace'" in line and "mytrace.jsonl" in line
    assert not out.exists()


@pytest.mark.parametrize("name", ["", "  "])
def test_empty_name_is_refused(tmp_path, capsys, name):
    out = tmp_path / "e.jsonl"
    assert main(["generate-trace", "--jobs", "4", "--seed", "1", "--name", name, "--out", str(out)]) == 2
    assert "--name: must not be empty" in _one_error(capsys)
    assert not out.exists()


def test_name_matching_the_file_reaches_the_loaded_trace(tmp_path, capsys):
    named, plain = tmp_path / "mytrace.jsonl", tmp_path / "plain.jsonl"
    argv = ["generate-trace", "--jobs", "4", "--seed", "1"]
    assert main([*argv, "--name", "mytrace", "--out", str(named)]) == 0
    assert main([*argv, "--out", str(plain)]) == 0
    printed = capsys.readouterr().out
    assert "wrote 4 jobs (mytrace)" in printed and "wrote 4 jobs (plain)" in printed
    assert load_trace(named).name == "mytrace" and load_trace(plain).name == "plain"
    assert named.read_bytes() == plain.read_bytes()  # the name changes nothing in the file


# --- import-trace ---------------------------------------------------------------------------


def _import(tmp_path, *argv: str, out: str = "t.jsonl", fmt: str = "helios") -> tuple[int, Path]:
    target = tmp_path / out
    return main(["import-trace", "--format", fmt, *argv, "--out", str(target)]), target


@pytest.mark.parametrize("window", ["", " ", "abc"])
def test_empty_or_invalid_window_is_refused(tmp_path, capsys, window):
    code, out = _import(tmp_path, HELIOS, "--window", window)
    assert code == 2 and "--window" in _one_error(capsys)
    assert not out.exists()


def test_helios_file_given_twice_is_refused(tmp_path, capsys):
    code, out = _import(tmp_path, HELIOS, HELIOS)
    line = _one_error(capsys)
    assert code == 2 and f"FILE {HELIOS}: given twice" in line
    assert not out.exists()


def test_same_file_under_another_spelling_is_refused(tmp_path, capsys):
    other = str(DATA / ".." / "real_traces" / "pai_task_table.csv")
    code, out = _import(tmp_path, PAI_JOBS, PAI_TASKS, other, fmt="pai")
    line = _one_error(capsys)
    assert code == 2 and f"FILE {other}: given twice (the same file as {PAI_TASKS})" in line
    assert not out.exists()


def test_one_import_without_duplicates_writes_every_job_once(tmp_path, capsys):
    code, out = _import(tmp_path, HELIOS)
    assert code == 0 and "51 trace jobs written" in capsys.readouterr().out
    assert len(out.read_text().splitlines()) == 51 and validate_trace(out) == []
    code, out = _import(tmp_path, PAI_JOBS, PAI_TASKS, fmt="pai", out="pai.jsonl")
    assert code == 0 and validate_trace(out) == []


@pytest.mark.parametrize("name", ["h.trace", "h.tsv", "h"])
def test_out_extension_of_another_format_is_refused(tmp_path, capsys, name):
    code, out = _import(tmp_path, HELIOS, out=name)
    line = _one_error(capsys)
    assert code == 2 and f"--out {out}" in line and ".jsonl" in line
    assert not out.exists()


# --- throughput CSV -------------------------------------------------------------------------


def _validate_with(tmp_path, capsys, text: str) -> tuple[str, str]:
    """Run validate-trace with ``text`` as its throughput table: the table's path and the error."""
    table = tmp_path / "tp.csv"
    table.write_text(text, encoding="utf-8")
    assert main(["validate-trace", "teaching-12", "--throughputs", str(table)]) == 2
    return str(table), _one_error(capsys, stdout="")


@pytest.mark.parametrize("text, where", [
    ("# one\n# two\n\n" + HEADER + "ResNet-18,32,1,3\nResNet-18,32,2,x\n", "6:iterations_per_s: "),
    (HEADER + "ResNet-18,32,1\n", "2:iterations_per_s: missing"),
    (HEADER + "ResNet-18\n", "2:batch_size: missing"),
    (HEADER + "ResNet-18,32,1,3,9\n", "2:row: has 5 fields"),
    ("# c\n" + HEADER + "ResNet-18,32,1,3\n\nResNet-18,32,1,4\n", "5:model: ResNet-18 at batch size 32 on 1 GPU(s) "
                                                              "is already given on line 3"),
    (HEADER + "ResNet-18,32,3,3\n", "2:gang: "),
    (HEADER + "ResNet-18,0,1,3\n", "2:batch_size: "),
    (HEADER + ",32,1,3\n", "2:model: must not be empty"),
    (HEADER + "ResNet-18,32,1,1e300\n", "2:iterations_per_s: must be 0"),
    ("# c\nmodel,batch_size\nResNet-18,32\n", "2:gang: the header lacks column(s) gang, iterations_per_s"),
])
def test_bad_throughput_csv_names_file_line_and_field(tmp_path, capsys, text, where):
    table, line = _validate_with(tmp_path, capsys, text)
    assert f"error: {table}:{where}" in line


def test_empty_throughput_csv_is_refused(tmp_path, capsys):
    table, line = _validate_with(tmp_path, capsys, "# only a comment\n")
    assert f"error: {table}: no header line" in line


def test_valid_throughput_csv_loads_the_same_table(tmp_path):
    text = resources.files("shockwave_gym").joinpath("data/v100_throughputs.csv").read_text()
    commented = tmp_path / "v100.csv"
    commented.write_text("# a note\n\n" + text.replace("\n", "\n\n", 3), encoding="utf-8")
    builtin = ThroughputTable.builtin_v100()
    loaded = ThroughputTable.load(commented)
    assert loaded == builtin and loaded.items() == builtin.items() and len(loaded) == 81
    assert ThroughputTable.from_csv_text(HEADER + "ResNet-18,32,1,3.5\n", "x").items() == [
        (("ResNet-18", 32, 1), 3.5)]
    with pytest.raises(ThroughputError, match=r"^x:2:gang: "):
        ThroughputTable.from_csv_text(HEADER + "ResNet-18,32,x,3\n", "x")
