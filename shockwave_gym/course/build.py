"""Build the course kit: ``OUT/student/`` (notebooks without solutions or outputs) and
``OUT/instructor/`` (notebooks with solutions, and ``instructor.json``), from the source
notebooks of :data:`~shockwave_gym.course.labs.LABS` in the kit directory.

The build refuses (an :class:`~shockwave_gym.errors.InputError`) to write a student notebook
that still contains a solution line, e.g. a line repeated outside its solution block.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from shockwave_gym.course.kit import INSTRUCTOR_FILE
from shockwave_gym.course.labs import LABS
from shockwave_gym.course.markers import has_markers
from shockwave_gym.course.notebook import (
    INSTRUCTOR,
    STUDENT,
    make_version,
    read_notebook,
    solution_lines,
    write_notebook,
)
from shockwave_gym.errors import InputError

#: A solution line shorter than this (``)``, ``else:``) may also appear in a placeholder.
MIN_LEAK_CHARS = 8


@dataclass
class BuildReport:
    out: Path
    written: list[Path] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join([f"wrote {len(self.written)} files under {self.out}:"] + [f"  {p}" for p in self.written])


def default_source() -> Path:
    """The course's source notebooks and ``instructor.json`` installed with the package (the
    data package ``shockwave_gym.course.sources``), or a source checkout's ``notebooks/course``."""
    try:
        installed = resources.files("shockwave_gym.course.sources")
        if installed.is_dir() and (installed / INSTRUCTOR_FILE).is_file():
            return Path(str(installed))
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "notebooks" / "course"


def leaked_lines(student: dict, lines: list[str]) -> list[str]:
    """The solution ``lines`` (of at least :data:`MIN_LEAK_CHARS`) found anywhere in ``student``."""
    text = json.dumps(student, ensure_ascii=False)
    body = "\n".join(
        "".join(cell.get("source", "")) + "".join(json.dumps(o, ensure_ascii=False) for o in cell.get("outputs", []))
        for cell in student["cells"]
    )
    return [line for line in lines if len(line) >= MIN_LEAK_CHARS and (line in body or json.dumps(line)[1:-1] in text)]


def build_kit(source: str | Path, out: str | Path) -> BuildReport:
    """Write the student and instructor versions of every lab in ``source`` under ``out``."""
    source, out = Path(source), Path(out)
    if not source.is_dir():
        raise InputError(f"--source {source}: not a directory (the course's source notebooks; without --source "
                         "the ones installed with the package)")
    report = BuildReport(out)
    versions = {}
    for lab in LABS:
        notebook = read_notebook(source / lab.notebook)
        student = make_version(notebook, STUDENT, lab.notebook)
        leaks = leaked_lines(student, solution_lines(notebook, lab.notebook))
        if leaks or has_markers(json.dumps(student, ensure_ascii=False)):
            shown = leaks[0] if leaks else "a solution marker"
            raise InputError(f"{source / lab.notebook}: the student version would contain {shown!r}; "
                             "keep lines shared with the placeholder outside the solution block")
        versions[lab.notebook] = (student, make_version(notebook, INSTRUCTOR, lab.notebook))
    seeds = source / INSTRUCTOR_FILE
    if not seeds.is_file():
        raise InputError(f"{seeds}: no such file (the instructor-only seeds of each lab)")
    for which in (STUDENT, INSTRUCTOR):
        (out / which).mkdir(parents=True, exist_ok=True)
    for name, (student, instructor) in versions.items():
        for which, notebook in ((STUDENT, student), (INSTRUCTOR, instructor)):
            write_notebook(notebook, out / which / name)
            report.written.append(out / which / name)
    shutil.copyfile(seeds, out / INSTRUCTOR / INSTRUCTOR_FILE)
    report.written.append(out / INSTRUCTOR / INSTRUCTOR_FILE)
    return report
