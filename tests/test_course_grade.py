"""The course grader grades each lab's stated task: the placeholder scores 0 on the task
criteria and the reference solution full marks, on public and instructor-only cases; bad
submissions get one clear line and exit status 2 from ``shockwave-gym course grade``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.course import LABS, grade_object
from shockwave_gym.course.kit import hidden_seeds
from shockwave_gym.course.notebook import INSTRUCTOR, STUDENT, graded_code, read_notebook
from shockwave_gym.course.submission import run_code

KIT = Path(__file__).resolve().parents[1] / "notebooks" / "course"


def _graded(lab, which: str):
    code = graded_code(read_notebook(KIT / lab.notebook), which, lab.notebook)
    return code, run_code(code, f"{lab.notebook} ({which})").entry(lab.entry, lab.kind)


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.key)
def test_placeholder_scores_zero_and_reference_full_marks(lab):
    seeds = hidden_seeds(KIT, lab.key)
    code, placeholder = _graded(lab, STUDENT)
    report = grade_object(lab.key, placeholder, seeds=seeds, code=code)
    assert [c.name for c in report.criteria if not c.rule] == [name for name, _ in lab.task]
    assert all(c.passed for c in report.criteria if c.rule), report.text()  # valid, just not good
    assert report.score == 0, report.text()
    assert "task not met" in report.text()
    code, reference = _graded(lab, INSTRUCTOR)
    report = grade_object(lab.key, reference, seeds=seeds, code=code)
    assert report.hidden and len(report.cases) > len(lab.module.public_cases())
    assert report.score == report.max_score == 100, report.text()
    assert report.text().endswith("task met")


def _criterion(report, name: str):
    return next(c for c in report.criteria if c.name == name)


def _write(tmp_path: Path, name: str, code: str) -> Path:
    path = tmp_path / name
    path.write_text(code, encoding="utf-8")
    return path


def test_grade_command_reports_criteria_and_json(tmp_path, capsys):
    lab = next(lab for lab in LABS if lab.key == "markets")
    code, _ = _graded(lab, INSTRUCTOR)
    path = _write(tmp_path, "good.py", code)
    assert main(["course", "grade", "markets", str(path), "--kit", str(KIT), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["score"] == data["max_score"] == 100 and data["hidden"]
    assert {c["name"] for c in data["criteria"]} == {"feasible", "optimal", "proportionally fair", "own work"}


HANDED_IN_ANSWERS = {
    # the package's own answer to each lab's task, handed in as the submission
    "adaptation": "from shockwave_gym.interface import predicted_remaining_s as remaining_time_estimate\n",
    "fairness": "from shockwave_agents import make_agent\n\n\nclass MyAgent:\n    def __new__(cls):\n"
                "        return make_agent('shockwave-fair')\n",
    "markets": "from shockwave_gym.course.lab_markets import optimum as nsw_allocation\n",
}


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.key)
def test_handing_in_the_packages_answer_breaks_the_own_work_rule(lab, tmp_path, capsys):
    path = _write(tmp_path, f"{lab.key}.py", HANDED_IN_ANSWERS[lab.key])
    assert main(["course", "grade", lab.key, str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rule = next(c for c in data["criteria"] if c["name"] == "own work")
    assert not rule["passed"] and "uses the package's" in rule["detail"]
    assert data["score"] == 0


BAD_SUBMISSIONS = {
    "missing.py": (None, "no such submission file"),
    "syntax.py": ("def nsw_allocation(instance:\n", "syntax.py:1: syntax error"),
    "raises.py": ("x = 1\nraise RuntimeError('boom')\n", "raises.py (line 2): running the submission raised RuntimeError: boom"),
    "noentry.py": ("def other(instance):\n    return 0\n", "defines no 'nsw_allocation'"),
    "notes.txt": ("hello", "a submission is a .py file or a lab notebook"),
}


@pytest.mark.parametrize("name", sorted(BAD_SUBMISSIONS))
def test_bad_submission_is_one_line_and_status_2(name, tmp_path, capsys):
    code, message = BAD_SUBMISSIONS[name]
    path = tmp_path / name if code is None else _write(tmp_path, name, code)
    assert main(["course", "grade", "3", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_a_batch_grades_every_submission_and_reports_the_broken_ones(tmp_path, capsys):
    lab = next(lab for lab in LABS if lab.key == "markets")
    good = _write(tmp_path, "good.py", _graded(lab, INSTRUCTOR)[0])
    placeholder = _write(tmp_path, "placeholder.py", _graded(lab, STUDENT)[0])
    broken = _write(tmp_path, "broken.py", "raise ValueError('oops')\n")
    assert main(["course", "grade", "3", str(good), str(broken), str(placeholder)]) == 2
    captured = capsys.readouterr()
    assert "broken.py (line 1): running the submission raised ValueError: oops" in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert captured.out.count("score 100/100: task met") == 1 and captured.out.count("score 0/100") == 1


def test_bad_lab_and_bad_kit_are_input_errors(tmp_path, capsys):
    path = _write(tmp_path, "a.py", "def nsw_allocation(instance):\n    return 0\n")
    assert main(["course", "grade", "9", str(path)]) == 2
    assert "no lab '9'" in capsys.readouterr().err
    assert main(["course", "grade", "3", str(path), "--kit", str(tmp_path)]) == 2
    assert "instructor.json: no such file" in capsys.readouterr().err
    _write(tmp_path, "instructor.json", json.dumps({"hidden_seeds": {"markets": [-1]}}))
    assert main(["course", "grade", "3", str(path), "--kit", str(tmp_path)]) == 2
    assert "hidden_seeds.markets: seeds are integers" in capsys.readouterr().err


def test_lab2_credits_each_case_so_a_nearly_right_agent_shows_progress():
    code = ("import numpy as np\nfrom shockwave_agents.base import Agent\n"
            "from shockwave_gym.interface import ftf_estimate, pack_in_order\n\n\nclass MyAgent(Agent):\n"
            "    def act(self, view):\n        active = view.active_job_ids\n"
            "        order = active[np.argsort(-ftf_estimate(view, active), kind='stable')]  # no restart bonus\n"
            "        return pack_in_order(order, view.gang, view.gpus)\n")
    entry = run_code(code, "near.py").entry("MyAgent", "a class")
    report = grade_object("fairness", entry, seeds=hidden_seeds(KIT, "fairness"), code=code)
    fairness = _criterion(report, "fairness")
    assert not fairness.passed and 0 < fairness.met < fairness.total
    assert fairness.earned == round(60 * fairness.met / fairness.total)
    assert 0 < report.score < 100 and "[PART]" in report.text()


def test_an_invalid_agent_breaks_the_rule_and_is_not_graded(tmp_path):
    code = ("from shockwave_agents.base import Agent\n\n\nclass MyAgent(Agent):\n"
            "    def act(self, view):\n        return view.active_job_ids  # every job, GPUs or not\n")
    report = grade_object("fairness", run_code(code, "greedy.py").entry("MyAgent", "a class"), code=code)
    valid = _criterion(report, "valid agent")
    assert valid.rule and not valid.passed and "GPUs" in valid.detail  # check_agent's own message
    assert report.score == 0
    assert all("not graded" in c.detail for c in report.criteria if not c.rule)


def test_lab1_refuses_the_packaged_predictor_and_bad_shapes():
    code = ("from shockwave_gym.interface import predicted_remaining_s\n\n\n"
            "def remaining_time_estimate(view):\n    return predicted_remaining_s(view)\n")
    entry = run_code(code, "copy.py").entry("remaining_time_estimate", "a function")
    report = grade_object("adaptation", entry, code=code)
    own_work = _criterion(report, "own work")
    assert not own_work.passed and "predicted_remaining_s" in own_work.detail
    assert report.score == 0
    short = run_code("import numpy as np\ndef remaining_time_estimate(view):\n    return np.ones(1)\n", "short.py")
    report = grade_object("adaptation", short.entry("remaining_time_estimate", "a function"), code="")
    assert "expected shape" in _criterion(report, "returns estimates").detail and report.score == 0
    nan = run_code("import numpy as np\ndef remaining_time_estimate(view):\n    return np.full(view.num_jobs, np.nan)\n", "nan.py")
    report = grade_object("adaptation", nan.entry("remaining_time_estimate", "a function"), code="")
    assert "job 0's estimate is nan" in _criterion(report, "returns estimates").detail


def test_lab3_refuses_an_allocation_over_capacity():
    code = "import numpy as np\ndef nsw_allocation(instance):\n    return np.asarray(instance.cap) * 0 + instance.rounds\n"
    report = grade_object("markets", run_code(code, "greedy.py").entry("nsw_allocation", "a function"), code=code)
    assert not _criterion(report, "feasible").passed and report.score == 0


@pytest.mark.parametrize("lab_key, baselines", [("fairness", {"fifo", "themis"}), ("adaptation", {"srtf"})])
def test_baselines_run_once_for_a_batch_of_submissions(lab_key, baselines, monkeypatch):
    """Grading several submissions on the same cases runs each baseline once per case."""
    import shockwave_gym.course.baselines as cached

    monkeypatch.setattr(cached, "_METRICS", {})
    runs = []
    real = cached.run_episode
    monkeypatch.setattr(cached, "run_episode", lambda trace, agent, *a, **k: runs.append(agent.name) or real(trace, agent, *a, **k))
    lab = next(lab for lab in LABS if lab.key == lab_key)
    code, reference = _graded(lab, INSTRUCTOR)
    first = grade_object(lab.key, reference, code=code)
    after_one = len(runs)
    second = grade_object(lab.key, reference, code=code)
    assert first.score == second.score == 100
    assert set(runs) == baselines
    assert after_one == len(baselines) * len(lab.module.public_cases())
    assert len(runs) == after_one  # the second submission reused every baseline run
