"""``shockwave-gym course build`` works outside the repository and from a built wheel: the
course's sources ship as the data package ``shockwave_gym.course.sources``; the student kit
holds no solution line, no instructor seed file and no instructor-only case."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from shockwave_gym.course import LABS
from shockwave_gym.course.kit import INSTRUCTOR_FILE
from shockwave_gym.course.notebook import read_notebook, solution_lines

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "notebooks" / "course"
SOURCES = [lab.notebook for lab in LABS] + [INSTRUCTOR_FILE]


def _build(tmp_path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    code = "import sys; from shockwave_gym.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "course", "build", "--out", "kit"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)


def _check_student_kit(kit: Path) -> None:
    assert sorted(p.name for p in (kit / "student").iterdir()) == sorted(lab.notebook for lab in LABS)
    assert (kit / "instructor" / INSTRUCTOR_FILE).is_file()
    seeds = json.loads((KIT / INSTRUCTOR_FILE).read_text())["hidden_seeds"]
    hidden_names = [f"generated-16-seed{s}" for key in ("adaptation", "fairness") for s in seeds[key]]
    hidden_names += [f"market-seed{s}" for s in seeds["markets"]]
    for lab in LABS:
        text = (kit / "student" / lab.notebook).read_text(encoding="utf-8")
        secrets = [line for line in solution_lines(read_notebook(KIT / lab.notebook), lab.notebook) if len(line) >= 8]
        assert secrets and [line for line in secrets if line in text] == []
        assert "hidden_seeds" not in text and [name for name in hidden_names if name in text] == []


def test_build_from_outside_the_repository_uses_the_installed_sources(tmp_path):
    done = _build(tmp_path)
    assert done.returncode == 0, done.stderr
    _check_student_kit(tmp_path / "kit")


@pytest.mark.slow
def test_a_built_wheel_ships_the_sources_and_builds_the_kit(tmp_path):
    """Build a wheel from a copy of the source tree, then build the kit from the unpacked wheel
    (on sys.path ahead of anything else) in a directory outside the repository."""
    tree = tmp_path / "tree"
    for name in ("shockwave_gym", "agents", "traces", "notebooks/course"):
        shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(wheels), str(tree)], check=True, capture_output=True, timeout=600)
    wheel = next(wheels.glob("shockwave_gym-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert {f"shockwave_gym/course/sources/{name}" for name in SOURCES} <= names
        assert "shockwave_gym/course/child.py" in names and "shockwave_gym/course/guard.py" in names
        archive.extractall(tmp_path / "site")
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    where = subprocess.run([sys.executable, "-c", "import shockwave_gym; print(shockwave_gym.__file__)"],
                           cwd=run_dir, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(tmp_path / "site"))
    done = _build(run_dir, env)
    assert done.returncode == 0, done.stderr
    _check_student_kit(run_dir / "kit")
