"""The notebooks run top to bottom and the docs link up (the course's labs: tests/test_course_build.py).

Each notebook is executed with nbclient at its small size: ``SHOCKWAVE_GYM_NOTEBOOK_SMALL=1``
(read by every notebook's first code cell; documented in each notebook's introduction and in
docs/INDEX.md), with outputs written under a temporary ``SHOCKWAVE_GYM_NOTEBOOK_OUT``. Any
cell error fails the test with the cell and its traceback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
DOCS = REPO / "docs"
NOTEBOOK_NAMES = (
    "01_quickstart.ipynb",
    "02_head_to_head.ipynb",
    "03_train_rl_scheduler.ipynb",
)
SMALL_VARIABLE = "SHOCKWAVE_GYM_NOTEBOOK_SMALL"
MAX_NOTEBOOK_BYTES = 1_000_000


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
            assert "Running HiGHS" not in "".join(output.get("text", "")), f"{name}: committed with a solver banner"


def test_check_agent_reports_idle_rounds_of_a_non_work_conserving_agent():
    from shockwave_agents import make_agent
    from shockwave_gym.testing import check_agent

    assert check_agent(lambda: make_agent("fifo"), "teaching-12").idle_rounds == []  # backfilling FIFO
    gavel = check_agent(lambda: make_agent("gavel"), "teaching-12")
    # Gavel holds GPUs for jobs that arrived after its last allocation (docs/SEMANTICS.md M1/M4)
    assert gavel.idle_rounds
    assert "idle" in gavel.summary()


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


def test_inline_figures_keep_showing_after_evaluate_writes_its_figures(tmp_path, monkeypatch):
    """``evaluate(..., out=...)`` draws its PNGs without switching the caller's backend."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the dev extras (make install)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the dev extras (make install)")
    pytest.importorskip("ipykernel", reason="ipykernel is in the dev extras (make install)")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    out = tmp_path / "eval"
    cells = [
        "%matplotlib inline\nimport matplotlib\nimport matplotlib.pyplot as plt\nbefore = matplotlib.get_backend()",
        "import shockwave_gym\n"
        f"shockwave_gym.evaluate('fifo,srtf', 'teaching-12', gpus=4, workers=1, out={str(out)!r}, progress=False)\n"
        "assert matplotlib.get_backend() == before, (before, matplotlib.get_backend())",
        "plt.plot([0, 1], [1, 0])\nplt.title('after evaluate')\nplt.show()",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3")
    client.execute()
    assert (out / "figures" / "teaching-12" / "relative_bars.png").is_file()
    shown = [o for o in notebook.cells[2].outputs if o.get("output_type") == "display_data"]
    assert shown and "image/png" in shown[0]["data"], notebook.cells[2].outputs


def test_every_notebook_named_in_a_notebook_or_doc_exists():
    """A notebook that names another (``02_head_to_head.ipynb``, ``lab2_fairness.ipynb``)
    names one that is in the repository."""
    shipped = {p.name for p in NOTEBOOKS.rglob("*.ipynb")}
    missing = []
    for page in [*NOTEBOOKS.rglob("*.ipynb"), *DOCS.glob("*.md"), REPO / "README.md"]:
        for name in set(re.findall(r"[A-Za-z0-9_]+\.ipynb", page.read_text(encoding="utf-8"))):
            placeholder = name.startswith(("alice", "bob", "my")) or name.removesuffix(".ipynb").isupper()
            if name not in shipped and not placeholder:
                missing.append(f"{page.name}: {name}")
        for number in set(re.findall(r"\bnotebooks?\s+(0\d)\b", page.read_text(encoding="utf-8"))):
            if not any(shipped_name.startswith(f"{number}_") for shipped_name in shipped):
                missing.append(f"{page.name}: notebook {number}")
    assert not missing, missing


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_every_plot_in_a_notebook_has_a_title_and_a_y_label(name):
    """Plot cells name what they show in words (no raw column names as the only label)."""
    notebook = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    for index, cell in enumerate(notebook["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or not re.search(r"\.plot\(|\.plot\.|\.bar\(|\.scatter\(|subplots\(", source):
            continue
        assert re.search(r"\btitle\s*=|set_title\(|suptitle\(", source), f"{name} cell {index}: no title"
        assert re.search(r"\bylabel\s*=|set_ylabel\(", source), f"{name} cell {index}: no y label"
        assert not re.search(r"title\s*=\s*(f\"[^\"]*)?\{?metric\}?\"?\s*[,)]", source), f"{name} cell {index}: raw column title"
