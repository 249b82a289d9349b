"""Task suites: disjoint splits, byte-reproducible test traces, env ids."""

from __future__ import annotations

import csv
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import shockwave_gym  # noqa: F401  (registers the env ids)
from shockwave_gym.errors import InputError
from shockwave_gym.traces import load_trace
from shockwave_gym.traces.suites import (
    LOAD_LEVELS,
    SEED_RANGES,
    SPLITS,
    SUITES,
    MultiSuiteSource,
    Suite,
    SuiteTraceSource,
    entry_trace,
    get_suite,
    offered_load,
    regime_digest,
    regime_facts,
    regime_seed,
    resolve_suites,
    serialize_trace,
    split_digest,
    split_entries,
    split_traces,
    suite_regime,
)
from shockwave_gym.training.workload import TRAIN_SEED_MIN

#: The nine V100 suites with exact lengths (the first published ones).
NINE = ("small-light,small-nominal,small-overloaded,canonical,medium-nominal,large-nominal,gang-heavy,"
        "long-jobs,static-only")
#: sha256 of the nine suites' test split (names, cluster sizes, JSON-lines bytes), version 0.
#: Changing it means the published test split changed: bump the suites' version instead.
TEST_SPLIT_SHA256 = "4da38f8a954db8d64c6cd7f268a68ceae80c8dd87bf7673bbd5418b1b63d8416"
VALIDATION_SPLIT_SHA256 = "b7cc3b49b1a63e4264b52ad61174dae1a2c55fd286e8e7791db260dcdfb141ac"
#: the heterogeneous suite's splits (issue 15)
HETERO_TEST_SPLIT_SHA256 = "7e99c7664e3f1ab9260a098956946987c79264fc96dfa94a56f986a5586afaa1"
HETERO_VALIDATION_SPLIT_SHA256 = "0546897b2cd763eee055c4e5c226dd37c170e297fe072ddb7414ed35d9a61366"
#: the regime suites (issue 34): their traces (split_digest) and their regimes' per-job draws
#: (regime_digest: each job's estimate and early end)
REGIME_SUITES = ("canonical-estimate,canonical-unknown,small-overloaded-unknown,gang-heavy-estimate,"
                 "medium-nominal-unknown-early,hetero-mixed-unknown")
REGIME_TEST_SPLIT_SHA256 = "e42717131ad336fccef38feb5bcdb5fa64910b8711fdfabdb31ca75545199aef"
REGIME_VALIDATION_SPLIT_SHA256 = "1dbeb03b223b7e6075d033b67f838224db9592c91f6aa3848a24f1ed3f43bb2f"
REGIME_TEST_DRAWS_SHA256 = "d6aae94addd53dd35180475c08b6a8706f1be123d9a0e0b207f4abcd6747f8d7"
REGIME_VALIDATION_DRAWS_SHA256 = "ccafe4ec4e18a20fbd326722085c76089f0b7ea9a62fcbc3787974628aeff003"


def test_seed_ranges_are_disjoint_and_match_the_training_workload():
    ranges = sorted(SEED_RANGES.values())
    for (lo_a, hi_a), (lo_b, _) in zip(ranges, ranges[1:], strict=False):
        assert lo_a < hi_a <= lo_b
    # held-out seeds (validation, test) stay below the CLI's training seeds
    assert SEED_RANGES["validation"][1] <= TRAIN_SEED_MIN == SEED_RANGES["train"][0]


def test_every_fixed_seed_lies_in_its_split_and_no_seed_is_shared():
    seen: dict[tuple[str, int], str] = {}
    for suite in SUITES:
        for split in SPLITS:
            seeds = suite.seeds(split, 50)
            lo, hi = SEED_RANGES[split]
            assert all(lo <= s < hi for s in seeds)
            for seed in seeds:
                key = (suite.name, seed)
                assert key not in seen, f"{suite.name} seed {seed} in {seen.get(key)} and {split}"
                seen[key] = split
    train = {s for suite in SUITES for s in suite.seeds("train", 50)}
    held_out = {e.seed for e in split_entries(None, "test") + split_entries(None, "validation")}
    assert not train & held_out


def test_test_split_has_the_published_size_and_opens_with_the_authors_trace():
    entries = split_entries(None, "test")
    assert len(entries) == 5 * len(SUITES)
    canonical = [e for e in entries if e.suite == "canonical"]
    assert canonical[0].bundled == "authors-canonical-120" and canonical[0].seed is None
    assert len({e.trace_name for e in entries}) == len(entries)  # unique across suites, variants included
    traces = dict((t.name, (t, g)) for t, g in split_traces("canonical", "test"))
    trace, gpus = traces["authors-canonical-120"]
    assert gpus == 32
    assert serialize_trace(trace) == serialize_trace(load_trace("authors-canonical-120", gpus=32))


def test_fixed_splits_are_byte_identical_to_the_pinned_hashes():
    assert split_digest(NINE, "test") == TEST_SPLIT_SHA256
    assert split_digest(NINE, "validation") == VALIDATION_SPLIT_SHA256
    assert split_digest("hetero-mixed", "test") == HETERO_TEST_SPLIT_SHA256
    assert split_digest("hetero-mixed", "validation") == HETERO_VALIDATION_SPLIT_SHA256
    assert split_digest(REGIME_SUITES, "test") == REGIME_TEST_SPLIT_SHA256
    assert split_digest(REGIME_SUITES, "validation") == REGIME_VALIDATION_SPLIT_SHA256
    assert regime_digest(REGIME_SUITES, "test") == REGIME_TEST_DRAWS_SHA256
    assert regime_digest(REGIME_SUITES, "validation") == REGIME_VALIDATION_DRAWS_SHA256
    # "all" is every suite, in SUITES order
    assert [e.suite for e in split_entries(None, "test")] == [s.name for s in SUITES for _ in range(5)]


def test_fixed_splits_regenerate_identically_in_a_fresh_process():
    code = ("from shockwave_gym.traces.suites import split_digest, regime_digest; "
            f"print(split_digest({NINE!r}, 'test')); print(split_digest({NINE!r}, 'validation')); "
            f"print(split_digest({REGIME_SUITES!r}, 'test')); print(regime_digest({REGIME_SUITES!r}, 'test')); "
            f"print(regime_digest({REGIME_SUITES!r}, 'validation'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [TEST_SPLIT_SHA256, VALIDATION_SPLIT_SHA256, REGIME_TEST_SPLIT_SHA256, REGIME_TEST_DRAWS_SHA256,
                   REGIME_VALIDATION_DRAWS_SHA256]


def test_a_regime_suite_plays_its_base_suites_jobs_byte_for_byte_under_its_own_names():
    for suite in (s for s in SUITES if s.traces_of is not None):
        base = get_suite(suite.traces_of)
        assert not suite.exact and not suite.in_distribution and suite.stresses
        assert (suite.cluster, dict(suite.generator)) == (base.cluster, dict(base.generator))
        for split in ("test", "validation"):
            mine, theirs = split_entries(suite.name, split), split_entries(base.name, split)
            assert [(e.seed, e.bundled) for e in mine] == [(e.seed, e.bundled) for e in theirs]
            assert [e.trace_name for e in mine] == [f"{suite.name}-{split}-{i}" for i in range(5)]
            for a, b in zip(mine[:2], theirs[:2], strict=True):
                trace = entry_trace(a)
                assert trace.name == a.trace_name and serialize_trace(trace) == serialize_trace(entry_trace(b))
    # the authors' trace opens the canonical variants' test splits too, renamed
    assert split_entries("canonical-unknown", "test")[0].bundled == "authors-canonical-120"


def test_each_entry_carries_its_regime_seeded_from_the_trace():
    exact = split_entries("canonical", "test")[1]
    assert exact.regime is None and suite_regime("canonical", 5) is None
    estimate, unknown = split_entries("canonical-estimate", "test")[1], split_entries("canonical-unknown", "test")[1]
    assert (estimate.regime.knowledge, estimate.regime.early_endings) == ("estimate", 0.0)
    assert (unknown.regime.knowledge, unknown.regime.early_endings) == ("unknown", 0.0)
    # same trace, same draws in every variant of the base; another trace, another seed
    assert estimate.regime.seed == unknown.regime.seed == regime_seed("canonical", exact.seed)
    assert estimate.regime.seed != split_entries("canonical-estimate", "test")[2].regime.seed
    assert split_entries("canonical-estimate", "test")[0].regime.seed == regime_seed("canonical", "authors-canonical-120")
    early = split_entries("medium-nominal-unknown-early", "test")[0]
    assert early.regime.early_endings == 0.2
    ends = regime_facts(entry_trace(early), early.regime).decode().splitlines()
    assert 0 < sum(line.split("\t")[2] != "0" for line in ends) < len(ends)
    # the prior is the suite's own generator distribution (jobs up to 2 h, not the default 5 h)
    assert max(early.regime.prior.durations_s) == pytest.approx(2 * 3600)
    assert split_entries("hetero-mixed-unknown", "test")[0].cluster == get_suite("hetero-mixed").cluster_spec
    # a train seed gets its regime the same way, and a source maps its traces back to it
    seed = SEED_RANGES["train"][0] + 12345
    assert suite_regime("gang-heavy-estimate", seed).seed == regime_seed("gang-heavy", seed)
    source = SuiteTraceSource("gang-heavy-estimate", "train")
    trace = source.sample(np.random.default_rng(0))
    assert source.regime_of(trace) == suite_regime("gang-heavy-estimate", int(trace.name.rsplit("-s", 1)[1]))
    fixed = SuiteTraceSource("canonical-estimate", "test")
    assert fixed.regime_of(fixed.sample(np.random.default_rng(0))) == split_entries("canonical-estimate", "test")[0].regime


def test_bad_regime_suites_are_refused():
    with pytest.raises(InputError, match="regime must be one of"):
        Suite("x", "v100=4", "light", "s", {"num_jobs": 5}, regime="vague")
    with pytest.raises(InputError, match="early_endings"):
        Suite("x", "v100=4", "light", "s", {"num_jobs": 5}, regime="unknown", early_endings=1.0)
    with pytest.raises(InputError, match="cluster or regime"):
        split_traces("canonical-unknown", "test")
    with pytest.raises(InputError, match="cluster or regime"):
        split_traces(None, "test")
    with pytest.raises(InputError, match="information regime"):
        MultiSuiteSource("small-light,canonical-unknown").env_kwargs()


def test_each_suite_load_level_matches_its_offered_load():
    for suite in SUITES:
        lo, hi = LOAD_LEVELS[suite.load]
        assert lo <= offered_load(suite.config(0), suite.gpus) < hi, suite.name
    loads = {s.name: offered_load(s.config(0), s.gpus) for s in SUITES}
    assert loads["small-light"] < loads["small-nominal"] < loads["small-overloaded"]


def test_suites_span_cluster_sizes():
    sizes = {suite.gpus for suite in SUITES}
    assert min(sizes) <= 16 and 32 in sizes and max(sizes) >= 64


def test_generated_traces_follow_the_suite_config():
    suite = get_suite("gang-heavy")
    trace = split_traces("gang-heavy", "test")[0][0]
    assert trace.num_jobs == 80
    assert trace.source.startswith("generated(") and f"seed={suite.seeds('test')[0]}" in trace.source
    assert np.mean([job.gang >= 4 for job in trace.jobs]) > 0.2  # the default mix has 10%


def test_a_suite_can_carry_a_heterogeneous_cluster():
    suite = Suite("mixed", "k80=4,v100=4", "nominal", "test only", {"num_jobs": 5})
    assert suite.gpus == 8 and suite.cluster_spec.types == ("v100", "k80") and suite.heterogeneous
    assert not get_suite("small-nominal").heterogeneous


def test_the_heterogeneous_suite_is_in_all_and_its_env_has_the_cluster():
    hetero = get_suite("hetero-mixed")
    assert hetero.heterogeneous and str(hetero.cluster_spec) == "v100=8,p100=8,k80=8"
    assert hetero in resolve_suites("all") and hetero in resolve_suites(None)
    assert resolve_suites("hetero-mixed,small-light") == [hetero, get_suite("small-light")]
    assert {e.suite for e in split_entries("hetero-mixed", "test")} == {"hetero-mixed"}
    env = gym.make("shockwave_gym/Suite-hetero-mixed-v0", split="test")
    env.reset(seed=0)
    assert env.unwrapped.cluster == hetero.cluster_spec and env.unwrapped.trace.name == "hetero-mixed-test-0"
    # every caller that builds envs from suites carries the cluster's types
    kwargs = MultiSuiteSource("hetero-mixed,small-light", split="test").env_kwargs()
    assert kwargs[0]["cluster"] == hetero.cluster_spec and "cluster" not in kwargs[1]
    task = MultiSuiteSource("hetero-mixed").sample_task(np.random.default_rng(0))
    assert task.cluster == hetero.cluster_spec and task.regime is None


def test_bad_inputs_are_input_errors():
    with pytest.raises(InputError, match="unknown suite"):
        get_suite("nope")
    with pytest.raises(InputError, match="split must be one of"):
        split_entries(None, "dev")
    with pytest.raises(InputError, match="train seeds lie in"):
        get_suite("small-light").trace("train", 5)
    with pytest.raises(InputError, match="must not set"):
        Suite("bad", "v100=4", "light", "", {"num_jobs": 5, "seed": 3})
    with pytest.raises(InputError, match="weights"):
        MultiSuiteSource(["small-light", "canonical"], weights=[1.0])


def test_train_source_draws_fresh_train_seeds_from_the_env_rng():
    source = SuiteTraceSource("small-nominal", "train")
    a = source.sample(np.random.default_rng(1))
    b = source.sample(np.random.default_rng(1))
    c = source.sample(np.random.default_rng(2))
    assert serialize_trace(a) == serialize_trace(b) != serialize_trace(c)
    seed = int(a.name.rpartition("-s")[2])
    assert seed >= SEED_RANGES["train"][0]
    levels = SuiteTraceSource("small-nominal", "train", train_levels=2)
    names = {levels.sample(np.random.default_rng(k)).name for k in range(12)}
    assert names == {"small-nominal-train-0", "small-nominal-train-1"}


def test_suite_env_ids_are_registered_and_use_the_suite_cluster():
    for suite in SUITES:
        assert suite.env_id in gym.registry
    env = gym.make("shockwave_gym/Suite-medium-nominal-v0")
    env.reset(seed=3)
    first = env.unwrapped.trace.name
    assert env.unwrapped.gpus == 32 and first.startswith("medium-nominal-train-s")
    env.reset(seed=3)
    assert env.unwrapped.trace.name == first


def test_fixed_split_env_cycles_its_list_in_order():
    env = gym.make("shockwave_gym/Suite-canonical-v0", split="test")
    names = []
    for seed in range(6):
        env.reset(seed=seed)
        names.append(env.unwrapped.trace.name)
    expected = [e.trace_name for e in split_entries("canonical", "test")]
    assert names == expected + expected[:1]
    with pytest.raises(InputError, match="do not pass trace"):
        gym.make("shockwave_gym/Suite-canonical-v0", trace="teaching-12")


def test_multi_suite_source_covers_cluster_sizes():
    mix = MultiSuiteSource(["small-nominal", "medium-nominal", "large-nominal"])
    rng = np.random.default_rng(0)
    tasks = [mix.sample_task(rng) for _ in range(12)]
    assert {task.gpus for task in tasks} == {12, 32, 128}
    assert all(task.trace.name.startswith(task.suite.name) for task in tasks)
    assert mix.gpu_sizes == [12, 32, 128] and mix.max_num_jobs == 200


def test_docs_suites_md_holds_the_generated_tables():
    from pathlib import Path

    from shockwave_gym.traces.suites import suites_markdown

    text = (Path(__file__).resolve().parent.parent / "docs" / "SUITES.md").read_text()
    assert suites_markdown() in text


def test_multi_suite_env_kwargs_build_one_vector_env_of_mixed_cluster_sizes():
    from shockwave_gym.env.vector.vector_env import ClusterVectorEnv

    mix = MultiSuiteSource(["small-nominal", "medium-nominal"])
    kwargs = mix.env_kwargs(copies=2, max_jobs=48)
    assert [k["gpus"] for k in kwargs] == [12, 12, 32, 32]
    assert kwargs[0]["trace"] is not kwargs[1]["trace"]
    vec = ClusterVectorEnv.from_env_kwargs(kwargs)
    vec.reset(seed=0)
    assert vec.num_envs == 4
    with pytest.raises(InputError, match="copies"):
        mix.env_kwargs(copies=0)


def test_vector_clusters_on_a_fixed_split_start_at_different_traces():
    vec = gym.make_vec("shockwave_gym/Suite-small-light-v0", num_envs=3, split="validation")
    vec.reset(seed=0)  # cluster i played trace i, so its source's next trace is i + 1
    following = [template.source.sample(None).name for template in vec.templates]
    assert following == [f"small-light-validation-{i}" for i in (1, 2, 3)]
    kwargs = MultiSuiteSource(["small-light"], split="validation").env_kwargs(copies=3)
    rng = np.random.default_rng(0)
    first = [k["trace"].sample(rng).name for k in kwargs]
    assert first == [f"small-light-validation-{i}" for i in range(3)]


def test_run_and_compare_take_suite_trace_names_with_the_suite_cluster(tmp_path, capsys):
    import json

    from shockwave_gym.cli import main
    from shockwave_gym.harness import evaluate

    # the leaderboard's way: the split entry's trace on the suite's cluster
    entry = next(e for e in split_entries(["small-nominal"], "test") if e.trace_name == "small-nominal-test-0")
    expected = evaluate("fifo", [entry_trace(entry)], gpus={"small-nominal-test-0": get_suite("small-nominal").gpus},
                        workers=1, figures=False, progress=False)
    assert main(["run", "--agent", "fifo", "--trace", "small-nominal-test-0", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["gpus"] == get_suite("small-nominal").gpus
    assert record["makespan_s"] == expected["makespan_s"].iloc[0]
    assert record["avg_jct_s"] == expected["avg_jct_s"].iloc[0]
    out = tmp_path / "cmp"
    assert main(["compare", "--agents", "fifo", "--traces", "small-nominal-test-0", "hetero-mixed-validation-1",
                 "--workers", "1", "--no-figures", "--quiet", "--out", str(out)]) == 0
    rows = {r["trace"]: r for r in csv.DictReader((out / "results.csv").open())}
    assert float(rows["small-nominal-test-0"]["makespan_s"]) == expected["makespan_s"].iloc[0]
    hetero = get_suite("hetero-mixed")
    assert rows["hetero-mixed-validation-1"]["cluster"] == str(hetero.cluster_spec)
    assert int(rows["hetero-mixed-validation-1"]["gpus"]) == hetero.gpus


def test_run_and_compare_play_a_regime_suites_trace_in_its_regime_unless_told_otherwise(tmp_path, capsys):
    import json

    from shockwave_gym.cli import main
    from shockwave_gym.harness import evaluate

    name = "medium-nominal-unknown-early-test-0"
    entry = split_entries("medium-nominal-unknown-early", "test")[0]
    expected = evaluate("srtf", [entry_trace(entry)], regime=entry.regime, workers=1, figures=False,
                        progress=False).iloc[0]
    assert main(["run", "--agent", "srtf", "--trace", name, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["regime"] == entry.regime.describe() and record["avg_jct_s"] == expected["avg_jct_s"]
    assert main(["run", "--agent", "srtf", "--trace", name, "--regime", "exact", "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert "regime" not in exact and exact["avg_jct_s"] != expected["avg_jct_s"]  # 20% of jobs end early
    out = tmp_path / "cmp"
    assert main(["compare", "--agents", "srtf", "--traces", name, "medium-nominal-test-0", "--workers", "1",
                 "--no-figures", "--quiet", "--out", str(out)]) == 0
    rows = {r["trace"]: r for r in csv.DictReader((out / "results.csv").open())}
    assert float(rows[name]["avg_jct_s"]) == expected["avg_jct_s"]
    assert float(rows["medium-nominal-test-0"]["avg_jct_s"]) == exact["avg_jct_s"]  # same jobs, exact regime


@pytest.mark.parametrize(("trace", "words"), [
    ("small-nominal-test-9", "small-nominal's test split has the traces small-nominal-test-0, "),
    ("canonical-test-0", "canonical's test split has the traces authors-canonical-120, canonical-test-1"),
    ("no-such-suite-test-0", "not a bundled trace"),
])
def test_a_suite_trace_name_past_the_split_is_one_line_and_exit_2(trace, words, capsys):
    from shockwave_gym.cli import main

    assert main(["run", "--agent", "fifo", "--trace", trace]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_training_refuses_hidden_lengths_to_version_2_and_carries_a_heterogeneous_cluster():
    from shockwave_gym.training.tasks import resolve_suite_names, suite_tasks

    with pytest.raises(InputError, match=r"cannot train on canonical-unknown \(unknown\) with observation version 2"):
        suite_tasks("small-light,canonical-unknown", envs=None, val_traces=1)
    with pytest.raises(InputError, match="pass --obs-version 3"):
        resolve_suite_names("all")
    from shockwave_gym.traces.suites import SUITES

    assert [s.name for s in resolve_suite_names("all", obs_version=3)] == [s.name for s in SUITES]
    assert [s.name for s in resolve_suite_names("in-distribution")] == ["small-light", "small-nominal", "small-overloaded"]
    tasks = suite_tasks("hetero-mixed,small-light", envs=None, val_traces=1)
    hetero = get_suite("hetero-mixed").cluster_spec
    assert tasks.env_kwargs[0]["cluster"] == hetero and "cluster" not in tasks.env_kwargs[1]
    assert tasks.val_gpus == [24, 12] and tasks.val_sizes == [hetero, 12]


def test_training_refuses_more_validation_traces_than_a_suite_holds(tmp_path, capsys):
    """``--val-traces`` past a suite's validation split is refused, not cut short."""
    from shockwave_gym.cli import main
    from shockwave_gym.traces.suites import split_entries
    from shockwave_gym.training.tasks import suite_tasks

    held = len(split_entries([get_suite("small-light")], "validation"))
    assert len(suite_tasks("small-light,canonical", envs=None, val_traces=held).val_traces) == 2 * held
    with pytest.raises(InputError, match=rf"--val-traces {held + 1}: suite small-light has {held} validation traces"):
        suite_tasks("small-light,canonical", envs=None, val_traces=held + 1)
    code = main(["train", "--suites", "small-light", "--val-traces", str(held + 1), "--timesteps", "256",
                 "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert code == 2 and errors == [f"shockwave-gym: error: --val-traces {held + 1}: suite small-light has {held} "
                                    "validation traces"]
    assert "one env per suite (native)" in err
    assert not (tmp_path / "run" / "policy.npz").exists()


def test_reporting_quotes_the_digests_of_every_suite():
    """docs/REPORTING.md's digests of the whole test and validation splits are the live ones."""
    from pathlib import Path

    from shockwave_gym.traces.suites import split_digest

    text = (Path(__file__).resolve().parents[1] / "docs" / "REPORTING.md").read_text()
    for split in ("test", "validation"):
        assert f"`{split_digest(None, split)}`" in text, split
