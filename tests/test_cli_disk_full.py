"""A full disk while writing outputs: every command exits 2 with one stderr line naming the
file, leaves no file cut short under its final name (nor a temporary one), and still prints
the metrics it computed.

The disk is emulated in-process: files whose name contains a chosen fragment accept a few
bytes, then ``write`` raises ``OSError(ENOSPC)`` as a full file system does.
"""

from __future__ import annotations

import builtins
import errno
import io
import json

import pytest

from shockwave_gym.cli import main


class _FullDisk(io.RawIOBase):
    """A file whose writes stop with ENOSPC after ``room`` bytes (the bytes before land)."""

    def __init__(self, handle, room: int):
        self.handle, self.room = handle, room

    def write(self, data):
        if len(data) > self.room:
            self.handle.write(data[: self.room])
            self.handle.flush()
            self.room = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return self.handle.write(data)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


@pytest.fixture
def full_disk(monkeypatch):
    """``full_disk(fragment)``: files opened for writing whose name holds ``fragment`` fill up."""
    real_open = builtins.open

    def install(fragment: str, room: int = 100):
        def fake_open(file, mode="r", *args, **kwargs):
            handle = real_open(file, mode, *args, **kwargs)
            if any(m in mode for m in "wxa") and fragment in str(file):
                return _FullDisk(handle, room)
            return handle

        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(io, "open", fake_open)

    return install


def _one_line_exit_2(code, err, name):
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert name in lines[0] and "No space left on device" in lines[0], lines[0]


def _no_partial_files(directory, name):
    leftovers = [p for p in directory.rglob("*") if p.is_file() and name in p.name]
    assert leftovers == [], leftovers


@pytest.mark.parametrize("flag", ["--jobs-csv", "--timeline-csv"])
def test_run_csv_on_a_full_disk(tmp_path, capsys, full_disk, flag):
    target = tmp_path / "out.csv"
    full_disk("out.csv")
    code = main(["run", "--agent", "fifo", "--trace", "teaching-12", flag, str(target), "--json"])
    out, err = capsys.readouterr()
    _one_line_exit_2(code, err, str(target))
    assert json.loads(out)["avg_jct_s"] > 0  # the metrics were computed: they are printed
    _no_partial_files(tmp_path, "out.csv")


def test_run_csv_replaces_an_old_file_whole_or_not_at_all(tmp_path, capsys, full_disk):
    target = tmp_path / "jobs.csv"
    target.write_text("old,content\n")
    full_disk("jobs.csv")
    code = main(["run", "--agent", "fifo", "--trace", "teaching-12", "--jobs-csv", str(target)])
    out, err = capsys.readouterr()
    _one_line_exit_2(code, err, str(target))
    assert "avg_jct_s" in out
    assert target.read_text() == "old,content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["jobs.csv"]


@pytest.mark.parametrize("fragment", ["results.csv", "summary.md", "seed0-"])
def test_compare_on_a_full_disk(tmp_path, capsys, full_disk, fragment):
    out_dir = tmp_path / "cmp"
    full_disk(fragment)
    code = main(["compare", "--agents", "fifo", "srtf", "--traces", "teaching-12", "--gpus", "4", "--out",
                 str(out_dir), "--workers", "1", "--no-figures", "--quiet"])
    out, err = capsys.readouterr()
    _one_line_exit_2(code, err, fragment)
    _no_partial_files(out_dir, fragment)
    if fragment != "seed0-":  # every cell ran: the table is printed, "written:" is not
        assert "srtf" in out and "written:" not in out


@pytest.mark.parametrize("fragment", ["LEADERBOARD.md", "LEADERBOARD.csv"])
def test_leaderboard_on_a_full_disk(tmp_path, capsys, full_disk, fragment, monkeypatch):
    from shockwave_gym.harness import leaderboard as board

    entries = board.leaderboard_entries("test", None, True)[:1]  # one trace keeps the test short
    monkeypatch.setattr(board, "leaderboard_entries", lambda *a, **k: entries)
    out_dir = tmp_path / "lb"
    full_disk(fragment)
    code = main(["leaderboard", "--quick", "--agents", "fifo", "--out", str(out_dir), "--workers", "1", "--quiet"])
    _, err = capsys.readouterr()
    _one_line_exit_2(code, err, fragment)
    _no_partial_files(out_dir, fragment)


def test_course_build_on_a_full_disk(tmp_path, capsys, full_disk):
    out_dir = tmp_path / "kit"
    full_disk(".ipynb")
    code = main(["course", "build", "--out", str(out_dir)])
    _, err = capsys.readouterr()
    _one_line_exit_2(code, err, str(out_dir))
    _no_partial_files(tmp_path, ".ipynb")
    assert [p.name for p in tmp_path.iterdir()] == ["kit"]  # the staging directory is gone
