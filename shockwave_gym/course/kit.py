"""The instructor kit: the source notebooks (solutions marked) and ``instructor.json``, the
seeds of the instructor-only cases of each lab::

    {"hidden_seeds": {"adaptation": [7, 8], "fairness": [5, 9, 13], "markets": [11, 12, 13]}}

The student build never contains ``instructor.json``. Anyone holding the source repository can
read the seeds committed there: an instructor who wants them secret replaces them in a private
copy of the kit and grades with ``--kit`` pointing at it.
"""

from __future__ import annotations

from pathlib import Path

from shockwave_gym.course.notebook import read_json
from shockwave_gym.errors import InputError

INSTRUCTOR_FILE = "instructor.json"


def hidden_seeds(kit: str | Path, lab_key: str) -> tuple[int, ...]:
    """The instructor-only seeds of ``lab_key`` in ``kit``; an InputError names the file and field."""
    path = Path(kit) / INSTRUCTOR_FILE
    data = read_json(path, "no such file (the instructor kit holds the hidden seeds; is --kit right?)")
    seeds = data.get("hidden_seeds", {}).get(lab_key) if isinstance(data, dict) else None
    if not isinstance(seeds, list) or not seeds:
        raise InputError(f"{path}: hidden_seeds.{lab_key}: needs a non-empty list of seeds")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
            raise InputError(f"{path}: hidden_seeds.{lab_key}: seeds are integers in [0, 2**32), got {seed!r}")
    return tuple(seeds)
