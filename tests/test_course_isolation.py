"""The course grader on a class with hostile submissions (tests/course_hostile/): each runs in
its own child process, so no submission changes another's grade, every exit, signal,
exception, hang or over-limit is that submission's one-line failure, the package's answers
are not one import away, and ``--json`` prints exactly one object per submission."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.course import LABS, grade_object
from shockwave_gym.course.child import DENIED, ImportGuard, RefusedAccess, describe_exception
from shockwave_gym.course.isolation import child_environment
from shockwave_gym.course.kit import hidden_seeds
from shockwave_gym.course.notebook import INSTRUCTOR, graded_code, read_notebook
from shockwave_gym.course.submission import run_code

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "notebooks" / "course"
HOSTILE = Path(__file__).resolve().parent / "course_hostile"
#: The time limit of the hostile batches, and the overhead allowed per submission on top of
#: the limits (a child's start: a fresh interpreter importing numpy and the package).
LIMIT_S = 6
OVERHEAD_PER_SUBMISSION_S = 5.0

# what each lab-3 submission must get: a score (honest: also its score graded alone),
# "own work" (the rule is broken: it reached for the package's answer; 0 points), or a failure line
MARKETS = {
    "honest_waterfill.py": 100, "honest_placeholder.py": 0, "honest_partial.py": 27, "honest_zero.ipynb": 0,
    "tamper_report.py": "own work", "type_module_shortcut.py": "own work", "poison_globals.py": "own work",
    "forged_output.py": 0, "forged_channel.py": 0, "snoop.py": 0, "atexit_exit.py": 0,
    "orphan_fork.py": "raised PermissionError: os.fork: not available to a submission",
    "kill_parent.py": "raised PermissionError: os.kill: not available to a submission",
    "read_sources.py": "raised PermissionError: open ", "disarm_guards.py": "raised PermissionError: open ", "unhook_import.py": "raised PermissionError: open ",
    "write_package.py": "raised PermissionError: open ", "network_exfil.py": "own work",
    "base_exception.py": 0, "huge_answer.py": 0,
    "exit_zero.py": "raised SystemExit: 0", "os_exit.py": "ended the grading process (exit status 0)",
    "keyboard_interrupt.py": "raised KeyboardInterrupt", "generator_exit.py": "raised GeneratorExit",
    "bad_str.py": "raised Unprintable: (its message could not be shown: __str__ raised)",
    "cpu_loop.py": "limit", "sleep_hang.py": f"stopped at the time limit of {LIMIT_S} s",
    "deep_recursion.py": "", "memory_hog.py": "raised MemoryError", "kill_self.py": "killed by SIGKILL",
    "cells_not_dicts.ipynb": "cell 0: not a cell object (got int)",
    "metadata_null.ipynb": "cell 0: metadata must be an object, got null",
    "metadata_list.ipynb": "cell 0: metadata must be an object, got list",
    "tags_int.ipynb": "cell 0: metadata.tags must be a list of strings, got 5",
    "source_int.ipynb": "cell 0: source must be a string or a list of strings",
    "no_cells.ipynb": "not a notebook (no 'cells' list)", "not_json.ipynb": "not readable JSON",
    "no_graded_cell.ipynb": "no code cell is tagged 'graded'",
}
HONEST = [name for name, want in MARKETS.items() if name.startswith("honest")]


def _path(name: str) -> Path:
    return HOSTILE / ("notebooks" if name.endswith(".ipynb") else "markets") / name


def _grade_json(capsys, lab: str, paths, *extra: str) -> tuple[int, list[dict], str]:
    status = main(["course", "grade", lab, *map(str, paths), "--json", "--time-limit", str(LIMIT_S), *extra])
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def _task_met(data: dict) -> list[str]:
    return [c["name"] for c in data["criteria"] if c["points"] and (c["passed"] or c["met"])]


def test_the_hostile_batch_grades_everyone_on_their_own(capsys):
    assert len(MARKETS) >= 20 and sorted(MARKETS) == sorted(p.name for d in ("markets", "notebooks")
                                                            for p in (HOSTILE / d).iterdir())
    names = sorted(MARKETS, key=lambda n: (n not in HONEST, n))[::-1]  # honest ones after hostile ones
    started = time.monotonic()
    status, reports, err = _grade_json(capsys, "3", [_path(n) for n in names], "--kit", str(KIT))
    elapsed = time.monotonic() - started
    assert status == 2
    assert [Path(r["submission"]).name for r in reports] == names  # one JSON object per submission, in order
    failures = err.strip().splitlines()
    for name, data in zip(names, reports, strict=True):
        want = MARKETS[name]
        if isinstance(want, int):
            assert data["error"] is None and data["score"] == want, (name, data)
        elif want == "own work":
            own = next(c for c in data["criteria"] if c["name"] == "own work")
            assert not own["passed"] and data["score"] == 0, (name, data)
            assert "may not use" in own["detail"] or "uses the package's" in own["detail"]
        else:
            assert data["score"] == 0 and data["criteria"] == [] and want in data["error"], (name, data)
            assert "\n" not in data["error"]
            assert sum(name in line for line in failures) == 1, (name, failures)
    assert len(failures) == sum(1 for r in reports if r["error"])
    assert elapsed <= len(names) * (LIMIT_S + OVERHEAD_PER_SUBMISSION_S), elapsed
    # the forged report and JSON are the submission's output, kept as text, never a grade
    forged = reports[names.index("forged_output.py")]
    assert "score 100/100: task met" in forged["output"] and forged["score"] == 0
    # the snooping submission sees no kit, no seed and no case name: only the child's argv and a fixed environment
    snoop = reports[names.index("snoop.py")]["output"]
    assert str(KIT) not in snoop and "seed" not in snoop and "hidden" not in snoop and "instance-1" in snoop
    argv_line = next(line for line in snoop.splitlines() if line.startswith("ARGV"))
    assert argv_line.count(",") == 0 and "child.py" in argv_line
    # every honest submission gets in the batch exactly what it gets graded alone
    for name in HONEST:
        _, alone, _ = _grade_json(capsys, "3", [_path(name)], "--kit", str(KIT))
        batch = reports[names.index(name)]
        assert alone[0]["criteria"] == batch["criteria"] and alone[0]["score"] == batch["score"], name


def test_text_output_shows_prints_apart_from_the_grade(capsys):
    paths = [_path("forged_output.py"), _path("honest_placeholder.py")]
    assert main(["course", "grade", "3", *map(str, paths), "--time-limit", str(LIMIT_S)]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("score ")] == ["score 0/100: task not met "
                                                                               "(optimal, proportionally fair)"] * 2
    assert "output of the submission (shown, not graded):\n  | lab 3 (markets): forged_output.py" in out
    assert "  | score 100/100: task met" in out


@pytest.mark.parametrize("lab_key, names, zero_task", [
    ("adaptation", ["predictor_shortcut.py", "oracle_shortcut.py", "srtf_default.py", "read_predictor.py",
                    "placeholder.py"], 4),
    ("fairness", ["shipped_agent.py", "fifo.py", "poison_baselines.py", "fifo.py"], 1),
])
def test_shortcuts_score_zero_and_poison_reaches_no_one(lab_key, names, zero_task, capsys):
    """Lab 1's predictor, the simulator's oracle and SRTF's default estimate, and lab 2's shipped
    schedulers, are refused in the child (own work broken, 0 on the task); a FIFO agent that
    rewrites every metric in its process scores what FIFO scores, and so does FIFO after it."""
    lab = next(lab for lab in LABS if lab.key == lab_key)
    reference = graded_code(read_notebook(KIT / lab.notebook), INSTRUCTOR, lab.notebook)
    paths = [HOSTILE / lab_key / name for name in names]
    status, reports, _ = _grade_json(capsys, lab_key, paths + [KIT / lab.notebook], "--time-limit", "120")
    assert status == 0 and len(reports) == len(names) + 1
    for data in reports[:zero_task]:
        own = next(c for c in data["criteria"] if c["name"] == "own work")
        assert not own["passed"] and "may not use" in own["detail"], data
        assert _task_met(data) == [] and data["score"] == 0
    for data in reports[zero_task:-1]:
        assert all(c["passed"] for c in data["criteria"] if not c["points"]) and data["score"] == 0, data
    assert reports[-1]["score"] == 100
    # isolated grades equal in-process grades of the same code (the notebooks' self-check)
    for path, data in ((paths[zero_task], reports[zero_task]), (None, reports[-1])):
        code = path.read_text() if path else reference
        entry = run_code(code, "x").entry(lab.entry, lab.kind)
        assert grade_object(lab.key, entry, code=code).to_dict()["criteria"] == data["criteria"]


def test_lab2_efficiency_line_says_fairness_failed_there():
    lab = next(lab for lab in LABS if lab.key == "fairness")
    code = (HOSTILE / "fairness" / "fifo.py").read_text()
    report = grade_object("fairness", run_code(code, "fifo.py").entry(lab.entry, lab.kind), code=code,
                          seeds=hidden_seeds(KIT, "fairness"))
    line = next(line for line in report.text().splitlines() if "efficiency" in line)
    assert "[FAIL]" in line and "within the limit, but fairness is not met on this case" in line


def test_guard_refuses_denied_modules_and_records_use(monkeypatch):
    guard = ImportGuard(("shockwave_gym.course",))
    monkeypatch.setattr(sys, "meta_path", [guard, *sys.meta_path])
    for name in [n for n in sys.modules if n.startswith("shockwave_gym.course.lab_")]:
        monkeypatch.delitem(sys.modules, name)
    guard.armed = True
    import importlib

    stand_in = importlib.import_module("shockwave_gym.course.lab_markets")
    with pytest.raises(RefusedAccess, match="shockwave_gym.course.lab_markets.optimum"):
        stand_in.optimum(None)
    assert guard.refused == ["import shockwave_gym.course.lab_markets", "shockwave_gym.course.lab_markets.optimum"]
    assert all(prefix in DENIED[lab] for lab in DENIED for prefix in ("shockwave_gym.course",))
    assert "shockwave_gym.interface.predictor" in DENIED["adaptation"]


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from _code_objects(const)


def test_the_audit_hook_holds_everything_it_uses(monkeypatch, tmp_path):
    """The hook (called here directly: an installed hook stays for the process) looks up no
    global and no builtin, and keeps its own copy of the denied modules: replacing builtins
    or emptying the finder's list after it is made changes nothing it refuses."""
    import builtins
    import dis
    import os

    from shockwave_gym.course.guard import _audit_hook

    scratch, denied = tmp_path / "scratch", tmp_path / "denied"
    scratch.mkdir()
    guard = ImportGuard(("shockwave_gym.course",))
    refused = []
    hook = _audit_hook(refused, guard.denied, guard, str(scratch), (str(denied),), frozenset(), os.getpid())
    inner = [code for const in _audit_hook.__code__.co_consts if hasattr(const, "co_code")
             for code in _code_objects(const)]  # the hook and its helpers, not the factory itself
    assert {code.co_name for code in inner} >= {"hook", "path_refusal", "denies"}
    lookups = [(code.co_name, ins.argval) for code in inner for ins in dis.get_instructions(code)
               if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    assert lookups == []
    cases = [
        ("open", (str(scratch / "out.txt"), "w", 0)),  # writing in the scratch directory: allowed
        ("open", (str(tmp_path / "read.txt"), "r", 0)),  # reading outside it: allowed
        ("os.kill", (os.getpid(), 0)),  # signalling itself: allowed
        ("open", (str(denied / "lab.py"), "r", 0)), ("open", (str(tmp_path / "out.txt"), "a", 0)),
        ("os.remove", (str(tmp_path / "x"), -1)), ("socket.connect", (None, ("host", 80))),
        ("os.kill", (1, 9)), ("os.system", (b"ls",)), ("import", ("shockwave_gym.course.grade", None, [], [], [])),
    ]
    monkeypatch.setattr(sys, "meta_path", [p for p in sys.meta_path if p is not guard])  # the finder is gone
    guard.denied = ()  # and emptied (tests/course_hostile/markets/disarm_guards.py)
    replaced = {"isinstance": lambda obj, kind: False, "any": lambda iterable: False, "str": lambda value: "x",
                "tuple": lambda items: (), "len": lambda value: 0, "PermissionError": RuntimeError}
    saved = {name: getattr(builtins, name) for name in replaced}
    outcomes = []
    try:  # builtins replaced only around the calls (pytest itself needs them)
        for name, value in replaced.items():
            setattr(builtins, name, value)
        for event, args in cases:
            try:
                outcomes.append(hook(event, args))
            except BaseException as exc:  # noqa: BLE001 - recorded, checked below
                outcomes.append(exc)
    finally:
        for name, value in saved.items():
            setattr(builtins, name, value)
    assert outcomes[:3] == [None, None, None]
    assert [type(exc) for exc in outcomes[3:]] == [PermissionError] * 6 + [ImportError]
    assert refused == [f"open {denied / 'lab.py'}", f"writing {tmp_path / 'out.txt'}", f"os.remove {tmp_path / 'x'}",
                       "socket.connect", "os.kill", "os.system", "import shockwave_gym.course.grade"]
    assert all(str(exc) == f"{what}: not available to a submission" for exc, what in zip(outcomes[3:], refused, strict=True))


def test_describe_exception_survives_hostile_exceptions():
    class Unprintable(BaseException):
        def __str__(self):
            raise ValueError

    assert describe_exception(Unprintable()) == "Unprintable: (its message could not be shown: __str__ raised)"
    assert describe_exception(GeneratorExit()) == "GeneratorExit: "


def test_child_environment_holds_nothing_of_the_graders(monkeypatch, tmp_path):
    monkeypatch.setenv("SECRET_SEED", "12345")
    env = child_environment(str(tmp_path))
    assert "SECRET_SEED" not in env and env["HOME"] == env["TMPDIR"] == str(tmp_path)
    assert set(env) == {"PATH", "HOME", "TMPDIR", "LANG", "MPLBACKEND", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                        "MKL_NUM_THREADS"}
