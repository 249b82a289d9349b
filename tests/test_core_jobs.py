"""Job model: epochs, per-epoch batch-size schedules, durations and isolated time.

The canonical-trace checks recompute every job's isolated time with an independent
implementation written here from docs/SEMANTICS.md alone (its own TSV parsing of the bundled
authors' trace, the bundled throughput CSV and GNS table read as raw files, its own Accordion
rules), then compare with the package and with the FTF denominators in the authors' results.
"""

from __future__ import annotations

import csv
import json
import math
from importlib import resources

import numpy as np
import pytest

from shockwave_gym.adaptation import (
    accordion_critical,
    get_mode,
    gns_change_points,
    register_mode,
    registered_modes,
)
from shockwave_gym.errors import InputError
from shockwave_gym.jobs import JobSpec, parse_job_type
from shockwave_gym.profile import job_profile
from shockwave_gym.reference import authors_canonical
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable

# the authors' data as bundled, read as raw files (not through the package's readers)
CANONICAL_TRACE = resources.files("shockwave_gym.bundled_traces").joinpath("authors-canonical-120.trace")
V100_CSV = resources.files("shockwave_gym").joinpath("data/v100_throughputs.csv")
GNS_TABLE = resources.files("shockwave_gym").joinpath("data/gns_schedules.json")


def spec(model: str, b0: int, epochs: int, mode: str, gang: int = 1) -> JobSpec:
    """A job of exactly ``epochs`` epochs (total iterations = epochs x iterations/epoch)."""
    dataset = {"ResNet-18": 50_000, "ResNet-50": 100_000, "Transformer": 10_000,
               "LM": 59_675, "Recommendation": 117_907}[model]
    return JobSpec(0, model, b0, epochs * math.ceil(dataset / b0), gang, mode, 0.0)


def sizes_of(job: JobSpec) -> list[int]:
    return get_mode(job.mode).schedule(job).tolist()


def runs(pairs: list[tuple[int, int]]) -> list[int]:
    """[(size, count), ...] -> the expanded per-epoch list."""
    return [size for size, count in pairs for _ in range(count)]


# --- epochs and job types ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "b0", "iterations", "epochs"),
    [
        ("ResNet-18", 32, 143_450, 92),  # ceil(50000/32)=1563; 143450/1563 = 91.78 -> 92
        ("ResNet-18", 32, 1563 * 10, 10),  # exact multiple
        ("ResNet-18", 32, 1563 * 10 + 1, 11),  # one iteration more: one more epoch
        ("LM", 10, 134_583, 23),  # ceil(59675/10)=5968; 134583/5968 = 22.55 -> 23
        ("Transformer", 64, 5842, 38),  # ceil(10000/64)=157; 5842/157 = 37.2 -> 38
        ("Recommendation", 2048, 259_866, 4481),  # ceil(117907/2048)=58; 4480.4 -> 4481
        ("ResNet-50", 16, 1, 1),  # a single iteration is one epoch
    ],
)
def test_epochs_formula(model, b0, iterations, epochs):
    assert JobSpec(0, model, b0, iterations, 1, "static", 0.0).num_epochs == epochs


def test_parse_job_type():
    assert parse_job_type("ResNet-18 (batch size 32)") == ("ResNet-18", 32)
    assert parse_job_type("Recommendation (batch size 8192)") == ("Recommendation", 8192)
    for bad in ("ResNet-18 (batch 32)", "A3C (batch size 4)", "LM (batch size x)", ""):
        with pytest.raises(ValueError):
            parse_job_type(bad)


# --- schedules: static, accordion (incl. the 30% rule), gns ------------------------------


def test_static_schedule_is_constant():
    assert sizes_of(spec("ResNet-18", 64, 40, "static")) == [64] * 40


def test_accordion_resnet18_critical_regimes_and_30_percent_rule():
    # E = 300: the 30% rule covers 0-89, then 150-159 and 250-259 are critical again
    expected = runs([(32, 90), (256, 60), (32, 10), (256, 90), (32, 10), (256, 40)])
    assert sizes_of(spec("ResNet-18", 32, 300, "accordion")) == expected


def test_accordion_30_percent_rule_rounds_up_to_whole_epochs():
    # E = 92 (canonical job 1): 0.3 x 92 = 27.6, so epochs 0-27 (28 epochs) stay small
    assert sizes_of(spec("ResNet-18", 32, 92, "accordion")) == runs([(32, 28), (256, 64)])


def test_accordion_resnet18_starting_at_256_has_20_critical_epochs():
    # E = 50: 30% is 15 epochs, so "first 20" decides; at 128 the first 10 and 30% give 15
    assert accordion_critical(spec("ResNet-18", 256, 50, "accordion")).tolist() == [True] * 20 + [False] * 30
    assert accordion_critical(spec("ResNet-18", 128, 50, "accordion")).tolist() == [True] * 15 + [False] * 35


def test_accordion_resnet50_epoch_mod_30():
    # E = 100: 0-29 (30% rule and mod 30), 30-39, 60-69, 90-99 small; the rest at 128
    expected = runs([(32, 40), (128, 20), (32, 10), (128, 20), (32, 10)])
    assert sizes_of(spec("ResNet-50", 32, 100, "accordion")) == expected


def test_accordion_lm_first_ten_epochs():
    assert sizes_of(spec("LM", 10, 20, "accordion")) == runs([(10, 10), (80, 10)])  # 30% = 6
    assert sizes_of(spec("LM", 10, 100, "accordion")) == runs([(10, 30), (80, 70)])  # 30% = 30


@pytest.mark.parametrize(
    ("b0", "epochs", "expected"),
    [
        (512, 50, [(512, 30), (8192, 20)]),  # first 30 (30% = 15)
        (1024, 50, [(1024, 30), (8192, 20)]),
        (2048, 50, [(2048, 40), (8192, 10)]),  # first 40
        (4096, 50, [(4096, 15), (8192, 35)]),  # first 10, but 30% = 15
        # E = 100, 4096: 30% = 30, then 60-69 and 80-89 are critical
        (4096, 100, [(4096, 30), (8192, 30), (4096, 10), (8192, 10), (4096, 10), (8192, 10)]),
    ],
)
def test_accordion_recommendation(b0, epochs, expected):
    assert sizes_of(spec("Recommendation", b0, epochs, "accordion")) == runs(expected)


def test_accordion_transformer_never_changes():
    assert sizes_of(spec("Transformer", 32, 60, "accordion")) == [32] * 60
    assert get_mode("accordion").reachable(spec("Transformer", 32, 60, "accordion")) == (32,)


def test_gns_change_points_hand_checked():
    # ResNet-18|16|1: [31, 32], [41, 64], [51, 128], [71, 256] (0-based epochs)
    expected = runs([(16, 31), (32, 10), (64, 10), (128, 20), (256, 9)])
    job = spec("ResNet-18", 16, 80, "gns")
    assert sizes_of(job) == expected
    assert get_mode("gns").reachable(job) == (16, 32, 64, 128, 256)
    # LM|10|1: [11, 20], [21, 40], [41, 80]; a 23-epoch job reaches only 40
    assert sizes_of(spec("LM", 10, 23, "gns")) == runs([(10, 11), (20, 10), (40, 2)])


def test_gns_unlisted_combination_never_changes():
    assert sizes_of(spec("Transformer", 16, 30, "gns")) == [16] * 30
    assert sizes_of(spec("Recommendation", 8192, 30, "gns")) == [8192] * 30


def test_gns_table_is_read_as_bundled():
    reference = json.loads(GNS_TABLE.read_text())["schedules"]
    ours = {f"{m}|{b}|{g}": [list(p) for p in points] for (m, b, g), points in gns_change_points().items()}
    assert ours == reference
    for key, points in reference.items():
        model, b0, gang = key.split("|")
        job = spec(model, int(b0), points[-1][0] + 3, "gns", int(gang))
        sizes = sizes_of(job)
        for epoch, size in points:
            assert sizes[epoch] == size and sizes[epoch - 1] != size, key


# --- epoch durations and isolated time ---------------------------------------------------


def test_epoch_duration_uses_fractional_iterations():
    # LM at 10: 59675 / 10 = 5967.5 iterations (no ceil) at 94.91094148 it/s = 62.87473 s
    # (with a ceil it would be 5968 iterations = 62.87999 s)
    table = ThroughputTable({("LM", 10, 1): 94.91094148})
    profile = job_profile(spec("LM", 10, 3, "static"), table)
    assert profile.epoch_durations_s.tolist() == pytest.approx([5967.5 / 94.91094148] * 3, rel=1e-15)
    assert profile.isolated_time_s == pytest.approx(3 * 62.8747319, rel=1e-8)


def test_missing_rate_for_a_reachable_size_is_an_error():
    table = ThroughputTable({("LM", 10, 1): 94.9})  # accordion also reaches 80
    with pytest.raises(InputError):
        job_profile(spec("LM", 10, 20, "accordion"), table)


# --- the canonical trace: an independent calculation --------------------------------------

DATASET = {"ResNet-18": 50_000, "ResNet-50": 100_000, "Transformer": 10_000, "LM": 59_675,
           "Recommendation": 117_907}
LARGEST = {"LM": 80, "ResNet-18": 256, "ResNet-50": 128, "Recommendation": 8192}


def independent_schedule(model: str, b0: int, gang: int, epochs: int, mode: str, gns: dict) -> list[int]:
    """docs/SEMANTICS.md's per-epoch batch sizes, written from the text without the package."""
    if mode == "static":
        return [b0] * epochs
    if mode == "gns":
        sizes, size = [], b0
        changes = dict(gns.get(f"{model}|{b0}|{gang}", []))
        for epoch in range(epochs):
            size = changes.get(epoch, size)
            sizes.append(size)
        return sizes
    if model == "Transformer":
        return [b0] * epochs
    forced = math.ceil(0.3 * epochs)  # the profile's 30% rule
    sizes = []
    for e in range(epochs):
        if model == "ResNet-18":
            critical = e < (20 if b0 == 256 else 10) or 150 <= e < 160 or 250 <= e < 260
        elif model == "ResNet-50":
            critical = e % 30 < 10
        elif model == "LM":
            critical = e < 10
        else:  # Recommendation
            first = 30 if b0 in (512, 1024) else 40 if b0 == 2048 else 10
            critical = e < first or 60 <= e < 70 or 80 <= e < 90
        sizes.append(b0 if critical or e < forced else LARGEST[model])
    return sizes


def independent_isolated_times() -> tuple[list[dict], np.ndarray]:
    rows = csv.DictReader(line for line in V100_CSV.read_text().splitlines() if not line.startswith("#"))
    rates = {(r["model"], int(r["batch_size"]), int(r["gang"])): float(r["iterations_per_s"]) for r in rows}
    gns = json.loads(GNS_TABLE.read_text())["schedules"]
    rows, iso = [], []
    for line in CANONICAL_TRACE.read_text().splitlines():
        if not line.strip():
            continue
        cols = line.split("\t")
        model, b0 = cols[0].rsplit(" (batch size ", 1)
        b0 = int(b0.rstrip(")"))
        total, gang, mode = int(cols[5]), int(cols[6]), cols[7]
        epochs = math.ceil(total / math.ceil(DATASET[model] / b0))
        sizes = independent_schedule(model, b0, gang, epochs, mode, gns)
        seconds = 0.0
        for b in sizes:
            rate = rates[(model, b, gang)]
            seconds += (DATASET[model] / b) / rate
        rows.append({"model": model, "b0": b0, "gang": gang, "mode": mode, "sizes": sizes,
                     "arrival": float(cols[11])})
        iso.append(seconds)
    return rows, np.array(iso)


@pytest.fixture(scope="module")
def canonical():
    from shockwave_gym.traces import load_trace

    table = ThroughputTable.builtin("v100")
    trace = load_trace("authors-canonical-120", table, gpus=32)
    rows, iso = independent_isolated_times()
    order = np.argsort([r["arrival"] for r in rows], kind="stable")
    return trace, table, [rows[i] for i in order], iso[order]


def test_canonical_isolated_time_of_every_job_matches_independent_calculation(canonical):
    trace, table, rows, iso = canonical
    assert len(trace.jobs) == 120
    sim = Simulator(trace.jobs, SimConfig(gpus=32), table)
    for job, row in zip(trace.jobs, rows, strict=True):
        assert job_profile(job, table).batch_sizes.tolist() == row["sizes"], job.job_id
    np.testing.assert_allclose(sim.static.isolated_time_s, iso, rtol=1e-12)


def test_canonical_isolated_times_hand_computed(canonical):
    trace, table, _, iso = canonical
    got = Simulator(trace.jobs, SimConfig(gpus=32), table).static.isolated_time_s
    hand = {
        # job 0, LM 10 gns gang 1, 23 epochs (LM|10|1 changes at 11 and 21):
        #   11 x 5967.5/94.91094148 + 10 x 2983.75/68.05405097 + 2 x 1491.875/46.82253256
        #   = 691.6221 + 438.4383 + 63.7247
        0: 1193.7850,
        # job 1, ResNet-18 32 accordion, 92 epochs; 30% rule -> 28 small:
        #   28 x 1562.5/42.97497938 + 64 x 195.3125/6.31952281 = 1018.0342 + 1977.9974
        1: 2996.0317,
        # job 3, Transformer 64 accordion (never changes), 38 epochs: 38 x 156.25/2.07543808
        3: 2860.8418,
        # job 20, ResNet-50 32 accordion, 34 epochs: small 0-10 (30%) and 30-33 -> 15 x
        #   3125/5.89934305 + 19 x 781.25/1.59789193 = 7945.8000 + 9289.5832
        20: 17235.3832,
        # job 10, Recommendation 2048 accordion, 4481 epochs: 30% -> 1345 small:
        #   1345 x 57.5718/59.26267281 + 3136 x 14.3929/11.6316932 = 1306.6242 + 3880.4560
        10: 5187.0801,
        # job 25, Recommendation 512 static, 528 epochs x (117907/512)/169.3497942
        25: 717.9908,
    }
    for job_id, seconds in hand.items():
        assert got[job_id] == pytest.approx(seconds, abs=1e-3), job_id


def test_canonical_total_gpu_seconds_is_about_635k(canonical):
    trace, table, _, iso = canonical
    gang = np.array([j.gang for j in trace.jobs])
    total = float((gang * Simulator(trace.jobs, SimConfig(gpus=32), table).static.isolated_time_s).sum())
    assert total == pytest.approx(635_000, rel=0.005)
    assert total == pytest.approx(float((gang * iso).sum()), rel=1e-12)
    # the authors' cluster_util x 32 x makespan is ~632k for every policy (running rule)
    for policy in authors_canonical().policies.values():
        assert total == pytest.approx(policy.utilization * 32 * policy.makespan_s, rel=0.01)


def test_canonical_matches_authors_ftf_denominators(canonical):
    trace, table, _, _ = canonical
    iso = Simulator(trace.jobs, SimConfig(gpus=32), table).static.isolated_time_s
    contention = 120 / 32  # N/G = 3.75
    for name, policy in authors_canonical().policies.items():
        denominators = np.array(policy.jct_s) / (np.array(policy.ftf) * contention)
        close = np.abs(denominators / iso - 1.0) < 1e-3
        assert close.sum() >= 110, name
        # the others are GNS jobs whose last epoch the authors left at the initial size
        for j in np.flatnonzero(~close):
            job = trace.jobs[j]
            assert job.mode == "gns", (name, j)
            profile = job_profile(job, table)
            at_initial = (job.dataset_size / job.initial_batch_size) / table.rate(
                job.model, job.initial_batch_size, job.gang)
            artifact = iso[j] - profile.epoch_durations_s[-1] + at_initial
            assert denominators[j] == pytest.approx(artifact, rel=1e-4), (name, j)


def test_builtin_table_carries_the_authors_v100_figures():
    # the authors' figures used by the hand computations above, and their unschedulable entry
    table = ThroughputTable.builtin("v100")
    assert len(table) == 81
    assert table.rate("LM", 10, 1) == 94.91094148
    assert table.rate("ResNet-18", 32, 1) == 42.97497938
    assert table.rate("Transformer", 64, 1) == 2.07543808
    assert table.rate("Recommendation", 512, 1) == 169.3497942
    assert not table.has("Transformer", 256, 1)


# --- pluggable modes -----------------------------------------------------------------------


def _double_after_five(job: JobSpec, epoch: int) -> int:
    return job.initial_batch_size * (2 if epoch >= 5 else 1)


register_mode(
    "test-core-jobs-warmup",
    _double_after_five,
    reachable=lambda job: (job.initial_batch_size, 2 * job.initial_batch_size),
    overwrite=True,
)


def test_registered_mode_drives_profile_and_simulation():
    assert "test-core-jobs-warmup" in registered_modes()
    job = spec("ResNet-18", 32, 8, "test-core-jobs-warmup")
    table = ThroughputTable({("ResNet-18", 32, 1): 10.0, ("ResNet-18", 64, 1): 10.0})
    profile = job_profile(job, table)
    assert profile.batch_sizes.tolist() == [32] * 5 + [64] * 3
    # 5 x 1562.5/10 + 3 x 781.25/10 = 781.25 + 234.375
    assert profile.isolated_time_s == pytest.approx(1015.625)
    sim = Simulator([job], SimConfig(gpus=1), table)
    while not sim.done:
        sim.step([0])
    assert sim.completion_s[0] == pytest.approx(1015.625)
    assert sim.view.reachable_batch_sizes(0) == (32, 64)


def test_registered_mode_loads_from_a_trace(tmp_path):
    from shockwave_gym.traces import load_trace

    line = "\t".join(["ResNet-18 (batch size 32)", "cmd", "dir", "--steps", "1", str(1563 * 8),
                      "1", "test-core-jobs-warmup", "1", "-1", "0", "0"])
    path = tmp_path / "custom.trace"
    path.write_text(line + "\n")
    trace = load_trace(path, ThroughputTable.builtin_v100(), gpus=4)
    assert trace.jobs[0].mode == "test-core-jobs-warmup"
    assert job_profile(trace.jobs[0], ThroughputTable.builtin_v100()).batch_sizes.tolist() == [32] * 5 + [64] * 3


def test_mode_registration_errors():
    with pytest.raises(ValueError):
        register_mode("static", _double_after_five)  # taken
    with pytest.raises(ValueError):
        register_mode("two words", _double_after_five)
    with pytest.raises(ValueError):
        register_mode("test-core-jobs-empty")  # no rule
    with pytest.raises(KeyError):
        get_mode("no-such-mode")


def test_mode_scheduling_an_undeclared_size_is_rejected():
    register_mode("test-core-jobs-liar", _double_after_five,
                  reachable=lambda job: (job.initial_batch_size,), overwrite=True)
    job = spec("ResNet-18", 32, 8, "test-core-jobs-liar")
    table = ThroughputTable({("ResNet-18", 32, 1): 10.0, ("ResNet-18", 64, 1): 10.0})
    with pytest.raises(InputError, match="reachable"):
        Simulator([job], SimConfig(gpus=1), table)
