"""``shockwave-gym course build`` writes student notebooks with no solution text (and no
outputs, no instructor seeds) and instructor notebooks with the solutions; both versions of
every lab run top to bottom at the small size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.course import LABS, build_kit
from shockwave_gym.course.kit import INSTRUCTOR_FILE
from shockwave_gym.course.markers import split_source
from shockwave_gym.course.notebook import read_notebook, solution_lines
from shockwave_gym.errors import InputError

KIT = Path(__file__).resolve().parents[1] / "notebooks" / "course"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("kit")
    assert main(["course", "build", "--source", str(KIT), "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.key)
def test_student_copy_has_no_solution_text(built, lab):
    source = read_notebook(KIT / lab.notebook)
    secrets = [line for line in solution_lines(source, lab.notebook) if len(line) >= 8]
    assert len(secrets) >= 5  # the lab really has a solution to hide
    student_text = (built / "student" / lab.notebook).read_text(encoding="utf-8")
    student = json.loads(student_text)
    code = "\n".join("".join(c["source"]) for c in student["cells"])
    assert [line for line in secrets if line in code] == []
    assert "SOLUTION" not in student_text and "# STUDENT" not in student_text
    assert all(not c.get("outputs") for c in student["cells"] if c["cell_type"] == "code")
    instructor = (built / "instructor" / lab.notebook).read_text(encoding="utf-8")
    instructor_code = "\n".join("".join(c["source"]) for c in json.loads(instructor)["cells"])
    assert all(line in instructor_code for line in secrets)
    assert "SOLUTION" not in instructor
    intro = "".join(student["cells"][0]["source"])
    for heading in ("Learning goals", "Expected time", "Prerequisites", "Graded task", "SHOCKWAVE_GYM_NOTEBOOK_SMALL"):
        assert heading in intro, f"{lab.notebook}: the introduction lacks {heading!r}"


def test_instructor_seeds_stay_out_of_the_student_kit(built):
    assert not (built / "student" / INSTRUCTOR_FILE).exists()
    assert (built / "instructor" / INSTRUCTOR_FILE).read_text() == (KIT / INSTRUCTOR_FILE).read_text()


def test_markers_must_balance_and_errors_name_the_cell_and_line():
    versions = split_source("a = 1\n# BEGIN SOLUTION\nb = 2\n# STUDENT\nb = 0\n# END SOLUTION\n", "code", "x cell 3")
    assert versions.student == "a = 1\nb = 0\n" and versions.instructor == "a = 1\nb = 2\n"
    assert versions.solution_lines == ("b = 2",)
    with pytest.raises(InputError, match="x cell 3, line 1: BEGIN SOLUTION is never closed"):
        split_source("# BEGIN SOLUTION\nsecret()\n", "code", "x cell 3")
    with pytest.raises(InputError, match="line 2: END SOLUTION without BEGIN"):
        split_source("a = 1\n# END SOLUTION\n", "code", "x cell 3")
    md = split_source("Q?\n<!-- BEGIN SOLUTION -->\nthe answer\n<!-- END SOLUTION -->\n", "markdown", "m")
    assert md.student == "Q?\n" and "the answer" in md.instructor


def test_build_refuses_a_solution_line_repeated_outside_its_block(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for lab in LABS:
        (source / lab.notebook).write_text((KIT / lab.notebook).read_text(encoding="utf-8"), encoding="utf-8")
    (source / INSTRUCTOR_FILE).write_text((KIT / INSTRUCTOR_FILE).read_text(encoding="utf-8"))
    notebook = read_notebook(source / LABS[0].notebook)
    notebook["cells"].append({"cell_type": "markdown", "metadata": {}, "source": [
        "weights = view.num_epochs[j] / sizes.size + counts[j][valid]  # Dirichlet posterior"]})
    (source / LABS[0].notebook).write_text(json.dumps(notebook), encoding="utf-8")
    with pytest.raises(InputError, match="the student version would contain"):
        build_kit(source, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written


def test_build_command_input_errors(tmp_path, capsys):
    assert main(["course", "build", "--source", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "--source" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["course", "build", "--source", str(KIT), "--out", str(blocker)]) == 2
    assert "--out" in capsys.readouterr().err


@pytest.mark.parametrize("which", ["student", "instructor"])
@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.key)
def test_built_lab_executes_at_small_size(built, lab, which, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the dev extras (make install)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the dev extras (make install)")
    if lab.key == "markets":
        pytest.importorskip("cvxpy", reason="cvxpy is in the course extra (make install)")
    monkeypatch.setenv("SHOCKWAVE_GYM_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    path = built / which / lab.notebook
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    check = next(c for c in notebook.cells if c.cell_type == "code" and "grade_object(" in c.source)
    printed = "".join(o.get("text", "") for o in check.outputs)
    # the self-check grades the cell above it: the placeholder scores 0, the solution 100
    assert ("score 100/100: task met" if which == "instructor" else "score 0/100") in printed, printed
