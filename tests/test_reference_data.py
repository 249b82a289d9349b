"""The authors' data bundled in the package: reference figures, throughput tables, the trace.

Nothing here needs anything outside the package (users clone it without ``../shared``).
"""

from __future__ import annotations

import importlib.util
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from shockwave_gym.errors import InputError, TraceError
from shockwave_gym.reference import (
    ReferenceDataError,
    authors_canonical,
    load_reference,
    parse_reference,
)
from shockwave_gym.throughput import BUILTIN_GPU_TYPES, ThroughputError, ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, load_trace

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bundle_reference_data.py"
BUNDLED_TEXT = resources.files("shockwave_gym").joinpath("data/authors_canonical_results.json").read_text()
AGENTS = ("gavel", "themis", "allox", "ossp", "mst", "gandiva_fair", "shockwave")


# --- reference figures -------------------------------------------------------------------


def test_bundled_reference_holds_every_policy_on_the_canonical_trace():
    ref = authors_canonical()
    assert (ref.trace, ref.gpus, ref.gpu_type, ref.round_s) == ("authors-canonical-120", 32, "v100", 120.0)
    assert tuple(ref.policies) == AGENTS
    assert ref.num_jobs == load_trace(ref.trace, gpus=ref.gpus).num_jobs == 120
    gavel = ref.policy("gavel")
    assert (gavel.authors_key, gavel.legend, gavel.makespan_s) == ("max_min_fairness", "Gavel", 33207.7)
    assert ref.policy("shockwave").summary() == {
        "makespan_s": 24197.4, "avg_jct_s": 9958.5, "geomean_jct_s": 7969.0, "worst_ftf": 1.784,
        "unfair_fraction": 0.05, "utilization": 0.8171,
    }


@pytest.mark.parametrize("agent", AGENTS)
def test_summaries_agree_with_the_per_job_lists(agent):
    figures = authors_canonical().policy(agent)
    jct, ftf = np.array(figures.jct_s), np.array(figures.ftf)
    assert jct.size == ftf.size == 120
    assert figures.avg_jct_s == pytest.approx(jct.mean(), abs=0.05)
    # the lists are rounded to 0.1 s, and the geometric mean was taken before rounding
    assert figures.geomean_jct_s == pytest.approx(np.exp(np.log(jct).mean()), abs=0.5)
    assert figures.worst_ftf == pytest.approx(ftf.max(), abs=5e-4)
    assert figures.unfair_fraction == pytest.approx(np.mean(ftf > 1.05), abs=5e-5)


def test_measured_wall_figures_carry_their_provenance():
    walls = authors_canonical().measured_wall
    assert walls["baseline_per_trace_s"].wall_s == 5.0
    assert walls["shockwave_highs_s"].wall_s == 479.0
    assert all("authors" in w.provenance for w in walls.values())


def test_unknown_agent_names_what_is_there():
    with pytest.raises(ReferenceDataError, match="no figures for agent 'fifo'.*gavel"):
        authors_canonical().policy("fifo")


def _damaged(edit) -> str:
    data = json.loads(BUNDLED_TEXT)
    edit(data)
    return json.dumps(data)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["policies"]["gavel"].pop("makespan_s"), "policies.gavel.makespan_s: missing"),
    (lambda d: d["policies"]["mst"].update(worst_ftf="4.9"), "policies.mst.worst_ftf: must be a finite number"),
    (lambda d: d["policies"]["mst"].update(worst_ftf=True), "policies.mst.worst_ftf: must be a finite number"),
    (lambda d: d["policies"]["ossp"].update(unfair_fraction=74.17), r"unfair_fraction: must be a finite number in \[0, 1\]"),
    (lambda d: d["policies"]["allox"]["jct_s"].pop(), "policies.allox.ftf: has 120 items but jct_s has 119"),
    (lambda d: d["policies"]["allox"]["jct_s"].__setitem__(3, -1), "policies.allox.jct_s: item 3 must be"),
    (lambda d: d["policies"]["themis"]["jct_s"].__setitem__(0, 99999.0), "policies.themis.avg_jct_s: does not match"),
    (lambda d: d["policies"]["themis"]["ftf"].__setitem__(0, 9.0), "policies.themis.worst_ftf: does not match"),
    (lambda d: d.update(policies=[]), "policies: must be an object, got list"),
    (lambda d: d.update(policies={}), "policies: must hold at least one policy"),
    (lambda d: d.update(format="something else"), "format: must be"),
    (lambda d: d["measured_wall"]["shockwave_highs_s"].pop("provenance"), "measured_wall.shockwave_highs_s.provenance: missing"),
    (lambda d: d.update(gpus=32.5), "gpus: must be an integer"),
])
def test_damaged_files_name_the_file_and_field(edit, message):
    with pytest.raises(ReferenceDataError, match=message) as caught:
        parse_reference(_damaged(edit), "ref.json")
    assert str(caught.value).startswith("ref.json: ")
    assert isinstance(caught.value, InputError)  # the CLI turns it into one line and exit 2


def test_non_finite_numbers_and_broken_json_are_refused(tmp_path):
    text = BUNDLED_TEXT.replace('"makespan_s": 33207.7', '"makespan_s": NaN', 1)
    with pytest.raises(ReferenceDataError, match="policies.gavel.makespan_s: must be a finite number"):
        parse_reference(text, "ref.json")
    path = tmp_path / "cut.json"
    path.write_text(BUNDLED_TEXT[:1000], encoding="utf-8")
    with pytest.raises(ReferenceDataError, match=rf"{path}: line \d+: not valid JSON"):
        load_reference(path)
    with pytest.raises(ReferenceDataError, match="cannot read"):
        load_reference(tmp_path / "absent.json")


# --- throughput tables ---------------------------------------------------------------------


def test_every_gpu_type_has_a_builtin_table_over_the_same_configurations():
    tables = {gpu_type: ThroughputTable.builtin(gpu_type) for gpu_type in BUILTIN_GPU_TYPES}
    assert set(tables) == {"k80", "p100", "v100"}
    keys = {gpu_type: [key for key, _ in table.items()] for gpu_type, table in tables.items()}
    assert keys["k80"] == keys["p100"] == keys["v100"] and len(keys["v100"]) == 81
    assert tables["v100"] == ThroughputTable.builtin() == ThroughputTable.builtin_v100()
    assert tables["k80"] != tables["v100"] != tables["p100"]
    # a K80 is far slower, and cannot fit ResNet-50 at batch size 128 at all
    assert tables["k80"].rate("ResNet-18", 256, 1) < tables["v100"].rate("ResNet-18", 256, 1) / 5
    assert not tables["k80"].has("ResNet-50", 128, 1) and tables["v100"].has("ResNet-50", 128, 1)
    assert tables["k80"].source == "built-in K80 table"


def test_unknown_gpu_type_lists_the_builtin_ones():
    with pytest.raises(ThroughputError, match="'a100'.*k80, p100, v100"):
        ThroughputTable.builtin("a100")


def test_trace_validation_follows_the_chosen_gpu_type():
    # the canonical trace reaches ResNet-50 at batch size 128, which a K80 cannot run
    with pytest.raises(TraceError, match=r"authors-canonical-120.trace:3:job_type: .*K80"):
        load_trace("authors-canonical-120", ThroughputTable.builtin("k80"), gpus=32)
    assert load_trace("authors-canonical-120", ThroughputTable.builtin("p100"), gpus=32).num_jobs == 120


def _bundle_script():
    spec = importlib.util.spec_from_file_location("bundle_reference_data", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("gpu_type", BUILTIN_GPU_TYPES)
def test_bundle_script_writes_each_table_back_byte_for_byte(gpu_type):
    # the maintainers' tool writes tables in exactly the bundled format, so re-running it
    # cannot move a single V100 figure (and with them every agent's metrics)
    bundled = resources.files("shockwave_gym").joinpath(f"data/{gpu_type}_throughputs.csv").read_text()
    assert _bundle_script().throughput_csv(ThroughputTable.builtin(gpu_type), gpu_type) == bundled


def test_bundle_script_refuses_a_missing_reference_folder(tmp_path, capsys):
    assert _bundle_script().main(["--shared", str(tmp_path / "nowhere"), "--check"]) == 2
    assert "no such directory" in capsys.readouterr().err


# --- the authors' trace ----------------------------------------------------------------------


def test_authors_trace_is_bundled_unchanged_in_their_format():
    trace = load_trace("authors-canonical-120")
    assert BUNDLED_GPUS["authors-canonical-120"] == 32
    assert trace.name == "authors-canonical-120" and trace.num_jobs == 120
    # their launch columns survive (a generated trace leaves them empty)
    assert trace.jobs[0].command.startswith("python3 main.py") and trace.jobs[0].working_dir
    # its arrivals are sorted, so our job ids are the trace-file order the reference lists use
    arrivals = [job.arrival_s for job in trace.jobs]
    assert arrivals == sorted(arrivals) and (arrivals[0], arrivals[-1]) == (0.0, 5011.0)
