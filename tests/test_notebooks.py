"""The notebooks run top to bottom, the course checker and its solution behave, the docs link up.

Each notebook is executed with nbclient at its small size: ``SHOCKWAVE_GYM_NOTEBOOK_SMALL=1``
(read by every notebook's first code cell; documented in each notebook's introduction and in
docs/INDEX.md), with outputs written under a temporary ``SHOCKWAVE_GYM_NOTEBOOK_OUT``. Any
cell error fails the test with the cell and its traceback.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
DOCS = REPO / "docs"
NOTEBOOK_NAMES = (
    "01_quickstart.ipynb",
    "02_head_to_head.ipynb",
    "03_train_rl_scheduler.ipynb",
    "04_course_scheduling_fairness.ipynb",
)
SMALL_VARIABLE = "SHOCKWAVE_GYM_NOTEBOOK_SMALL"
MAX_NOTEBOOK_BYTES = 1_000_000


@pytest.fixture(scope="module")
def course_modules():
    """``course_checker`` and the solution, imported from the notebooks directory."""
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import course_checker
        from solutions import ftf_agent

        yield course_checker, ftf_agent
    finally:
        sys.path.remove(str(NOTEBOOKS))


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_notebook_executes_at_small_size(name, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the dev extras (make install)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the dev extras (make install)")
    pytest.importorskip("ipykernel", reason="ipykernel is in the dev extras (make install)")
    # the kernel inherits this process's environment
    monkeypatch.setenv(SMALL_VARIABLE, "1")
    monkeypatch.setenv("SHOCKWAVE_GYM_NOTEBOOK_OUT", str(tmp_path))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    # jupyter_client starts a "python" kernel spec with sys.executable, i.e. this environment
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any error
    # the notebooks that write results put them under SHOCKWAVE_GYM_NOTEBOOK_OUT, at small size
    expected = {"02_head_to_head.ipynb": "02_small/canonical/results.csv",
                "03_train_rl_scheduler.ipynb": "03_small/mppo/policy.npz"}.get(name)
    if expected is not None:
        assert (tmp_path / expected).is_file()


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_committed_notebook_is_small_clean_and_documents_its_size(name):
    path = NOTEBOOKS / name
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES, f"{name}: strip or shrink its outputs"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = notebook["cells"]
    assert cells[0]["cell_type"] == "markdown"
    assert SMALL_VARIABLE in "".join(cells[0]["source"]), f"{name}: the introduction must document {SMALL_VARIABLE}"
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    if name != "01_quickstart.ipynb":  # 01 is small at any size
        assert SMALL_VARIABLE in code
    for cell in cells:
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", f"{name}: committed with an error output"


def test_checker_accepts_a_valid_agent_and_reports_idle_rounds(course_modules):
    checker, _ = course_modules
    from shockwave_agents import make_agent

    report = checker.check_agent(lambda: make_agent("fifo"), trace="teaching-12", baselines=("fifo", "gavel"))
    # the checked agent's row keeps its own label when it shares a baseline's name
    assert list(report.table.index) == ["fifo (checked)", "fifo", "gavel"]
    assert report.table.loc["fifo (checked)"].equals(report.table.loc["fifo"])  # same agent, same episode
    assert report.idle_rounds == []  # FIFO with backfilling is work-conserving
    gavel = checker.check_agent(lambda: make_agent("gavel"), trace="teaching-12", baselines=())
    # Gavel holds GPUs for jobs that arrived after its last allocation (docs/SEMANTICS.md M1/M4)
    assert gavel.idle_rounds
    assert "idle" in gavel.summary()


def test_checker_rejects_invalid_choices(course_modules):
    checker, _ = course_modules
    from shockwave_agents.base import Agent

    class Everything(Agent):
        def act(self, view):
            return view.active_job_ids

    class Duplicates(Agent):
        def act(self, view):
            active = view.active_job_ids
            return np.concatenate([active[:1], active[:1]])

    class Departed(Agent):
        def act(self, view):
            return [view.num_jobs - 1]  # the last job, long before it arrives

    class Floats(Agent):
        def act(self, view):
            return view.active_job_ids[:1] + 0.5  # fractional ids

    for agent, message in ((Everything, "GPUs"), (Duplicates, "duplicate"), (Departed, "not active"), (Floats, "integers")):
        with pytest.raises(checker.AgentCheckError, match=message):
            checker.check_agent(agent, trace="teaching-12", baselines=())


def test_checker_rejects_starvation_and_nondeterminism(course_modules):
    checker, _ = course_modules
    from shockwave_agents.base import Agent, pack_in_order

    class Idle(Agent):
        def act(self, view):
            return []

    with pytest.raises(checker.AgentCheckError, match="finished within"):
        checker.check_agent(Idle, trace="teaching-12", baselines=(), max_rounds=30)

    unseeded = np.random.default_rng()

    class Unseeded(Agent):
        def act(self, view):
            order = unseeded.permutation(view.active_job_ids)
            return pack_in_order(order, view.gang, view.gpus)

    with pytest.raises(checker.AgentCheckError, match="chose differently"):
        checker.check_agent(Unseeded, trace="teaching-12", baselines=())


def test_solution_meets_the_exercise_goal(course_modules):
    """The exercise: worst FTF below FIFO's and Gavel's, average JCT no worse than Gavel's."""
    checker, solution = course_modules
    report = checker.check_agent(solution.FinishTimeFairAgent, trace="teaching-12", baselines=("fifo", "gavel"))
    table = report.table
    ours = table.loc["ftf-first"]
    assert ours.worst_ftf < table.loc["fifo", "worst_ftf"]
    assert ours.worst_ftf < table.loc["gavel", "worst_ftf"]
    assert ours.avg_jct_s <= table.loc["gavel", "avg_jct_s"]
    assert report.idle_rounds == []
    with pytest.raises(ValueError):
        solution.FinishTimeFairAgent(stickiness=-1)


def test_docs_index_links_every_page_and_every_relative_link_resolves():
    index = (DOCS / "INDEX.md").read_text(encoding="utf-8")
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "INDEX.md")
    missing = [page for page in pages if f"({page})" not in index]
    assert not missing, f"docs/INDEX.md does not link {missing}"
    broken = []
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.name} -> {target}")
    assert not broken, f"broken relative links: {broken}"
