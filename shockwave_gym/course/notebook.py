"""A lab notebook in its two versions: the student's (no solutions, no outputs) and the
instructor's (solutions in place of the placeholders), from one source notebook.

Notebooks are read and written as plain JSON (nbformat 4), so building a kit needs no
Jupyter install. See :mod:`shockwave_gym.course.markers` for the marker syntax.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from shockwave_gym.course.markers import GRADED_TAG, SOLUTION_TAG, split_source
from shockwave_gym.errors import InputError

STUDENT, INSTRUCTOR = "student", "instructor"


def read_json(path: str | Path, missing: str):
    """The JSON document at ``path``; an :class:`InputError` names the file otherwise
    (``missing`` is the message when it does not exist)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: {missing}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not readable JSON ({exc})") from None


def read_notebook(path: str | Path) -> dict:
    """The notebook at ``path`` as a dict; an :class:`InputError` names the file otherwise."""
    path = Path(path)
    notebook = read_json(path, "no such notebook")
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise InputError(f"{path}: not a notebook (no 'cells' list)")
    for index, cell in enumerate(notebook["cells"]):
        problem = _cell_problem(cell)
        if problem:
            raise InputError(f"{path}: cell {index}: {problem}")
    return notebook


def _kind(value) -> str:
    return "null" if value is None else type(value).__name__


def _cell_problem(cell) -> str | None:
    """Why ``cell`` is not an nbformat-4 cell this module can read, or ``None``."""
    if not isinstance(cell, dict):
        return f"not a cell object (got {_kind(cell)})"
    if not isinstance(cell.get("cell_type", ""), str):
        return f"cell_type must be a string, got {_kind(cell['cell_type'])}"
    source = cell.get("source", "")
    if not isinstance(source, str) and not (isinstance(source, list) and all(isinstance(s, str) for s in source)):
        return "source must be a string or a list of strings"
    if "metadata" in cell and not isinstance(cell["metadata"], dict):
        return f"metadata must be an object, got {_kind(cell['metadata'])}"
    tags = cell.get("metadata", {}).get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        return f"metadata.tags must be a list of strings, got {json.dumps(tags)[:40]}"
    if "outputs" in cell and not isinstance(cell["outputs"], list):
        return f"outputs must be a list, got {_kind(cell['outputs'])}"
    return None


def cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def cell_tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _where(name: str, index: int) -> str:
    return f"{name} cell {index}"


def make_version(notebook: dict, which: str, name: str) -> dict:
    """A copy of ``notebook`` as ``which`` (:data:`STUDENT` or :data:`INSTRUCTOR`) sees it.

    The student version drops cells tagged ``solution``, keeps placeholders instead of
    solutions and has no outputs (they were made by the solutions). The instructor version
    keeps solutions and the source's outputs.
    """
    if which not in (STUDENT, INSTRUCTOR):
        raise ValueError(f"which must be {STUDENT!r} or {INSTRUCTOR!r}, got {which!r}")
    result = copy.deepcopy(notebook)
    cells = []
    for index, cell in enumerate(notebook["cells"]):
        if which == STUDENT and SOLUTION_TAG in cell_tags(cell):
            continue
        versions = split_source(cell_source(cell), cell.get("cell_type", ""), _where(name, index))
        out = copy.deepcopy(cell)
        out["source"] = getattr(versions, which).splitlines(keepends=True)
        if which == STUDENT and out.get("cell_type") == "code":
            out["outputs"], out["execution_count"] = [], None
        cells.append(out)
    result["cells"] = cells
    return result


def solution_lines(notebook: dict, name: str) -> list[str]:
    """Every line the student version must not contain: marked solution lines and the
    lines of cells tagged ``solution``."""
    lines = []
    for index, cell in enumerate(notebook["cells"]):
        source = cell_source(cell)
        if SOLUTION_TAG in cell_tags(cell):
            lines.extend(line.strip() for line in source.splitlines() if line.strip())
        else:
            lines.extend(split_source(source, cell.get("cell_type", ""), _where(name, index)).solution_lines)
    return lines


def graded_code(notebook: dict, which: str, name: str) -> str:
    """The code of the cells tagged ``graded``, as ``which`` sees it, joined in order."""
    parts = []
    for index, cell in enumerate(notebook["cells"]):
        if cell.get("cell_type") == "code" and GRADED_TAG in cell_tags(cell):
            parts.append(getattr(split_source(cell_source(cell), "code", _where(name, index)), which))
    if not parts:
        raise InputError(f"{name}: no code cell is tagged {GRADED_TAG!r} (cell metadata 'tags')")
    return "\n\n".join(parts)


def write_notebook(notebook: dict, path: Path) -> None:
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
