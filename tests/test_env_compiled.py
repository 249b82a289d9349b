"""The single env's compiled step (shockwave_gym/env/vector/single.py: the vector env's kernels at K = 1) against its Python path:
the same observations, rewards, flags, info, masks, view arrays, round records and metrics,
bit for bit, and the compiled step dropped when what it was built for changes."""

import gymnasium as gym
import numpy as np
import pytest

import shockwave_gym  # noqa: F401

pytest.importorskip("numba")

ENV_ID = "shockwave_gym/Cluster-v0"


def _same(a, b, where):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, tuple | list):
        assert type(a) is type(b) and len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{k}]")
    elif isinstance(a, float):
        assert type(b) is float and (a == b or (a != a and b != b)) and str(a) == str(b), where
    else:
        assert type(a) is type(b) and a == b, where


def _pair(**kwargs):
    fast, slow = gym.make(ENV_ID, **kwargs), gym.make(ENV_ID, **kwargs)
    slow.unwrapped._compiled_allowed = False
    return fast, slow


def _action(mode, rng, env, i):
    if mode == "priority":
        scores = rng.random(env.max_jobs, dtype=np.float32) * 2 - 1
        return np.round(scores, 1) if i % 5 == 0 else scores  # ties: arrival order
    bits = (rng.random(env.max_jobs) < 0.6).view(np.int8)
    return bits & env.action_masks()[1::2].view(np.int8) if i % 2 else bits  # some repaired


def _view_arrays(view):
    d = view.derived_arrays
    return [view.time_s, view.round_index, view.version > 0, view.work_done_s, view.completion_s, view.run_time_s,
            view.ran_last_round, view.is_active, d.epoch_progress, d.current_batch_size, d.mean_epoch_duration_s,
            d.observed_batch_size_counts, view.last_run_s, view.last_overhead_s, view.rounds_run]


@pytest.mark.parametrize("mode", ["priority", "select"])
@pytest.mark.parametrize("kwargs", [
    {"trace": "teaching-12"},
    {"max_jobs": 16, "skip_trivial": True, "reward": {"jct": 1.0, "ftf": 2.0, "ftf_excess": 1.0, "makespan": 0.5}},
    {"max_rounds": 60},
])
def test_compiled_step_matches_python_path(mode, kwargs):
    fast, slow = _pair(action_mode=mode, **kwargs)
    rng = np.random.default_rng(7)
    episodes = 0
    _same(fast.reset(seed=1), slow.reset(seed=1), "reset")
    for i in range(700):
        action = _action(mode, rng, fast.unwrapped, i)
        out_fast, out_slow = fast.step(action), slow.step(action)
        assert type(fast.unwrapped._compiled).__name__ == "SingleStep"
        for a, b, name in zip(out_fast, out_slow, ("obs", "reward", "terminated", "truncated", "info"), strict=True):
            _same(a, b, f"step {i} {name}")
        _same(fast.unwrapped.action_masks(), slow.unwrapped.action_masks(), f"step {i} masks")
        if i % 25 == 0:
            for k, (a, b) in enumerate(zip(_view_arrays(fast.unwrapped.view), _view_arrays(slow.unwrapped.view),
                                           strict=True)):
                _same(a, b, f"step {i} view array {k}")
        if out_fast[2] or out_fast[3]:
            records = [[(r.index, r.start_s, r.end_s, r.job_ids, r.run_s, r.overhead_s, r.completed_ids, r.gpus_busy)
                        for r in env.unwrapped.simulator.history] for env in (fast, slow)]
            for a, b in zip(*records, strict=True):
                for x, y in zip(a, b, strict=True):
                    _same(x, y, f"episode {episodes} record")
            episodes += 1
            _same(fast.reset(seed=1 + episodes), slow.reset(seed=1 + episodes), f"reset {episodes}")
    assert episodes >= 1


def test_non_finite_scores_change_nothing():
    fast, slow = _pair()
    fast.reset(seed=0)
    slow.reset(seed=0)
    sim = fast.unwrapped.simulator
    fast.step(np.zeros(fast.unwrapped.max_jobs, np.float32))
    before = (sim.round_index, sim.time_s, sim.work_done_s.copy(), fast.unwrapped.slots.slot_job.copy())
    bad = np.zeros(fast.unwrapped.max_jobs, np.float32)
    bad[fast.unwrapped.slots.slot_job >= 0] = np.nan
    with pytest.raises(Exception, match="priority scores must be finite"):
        fast.step(bad)
    after = (sim.round_index, sim.time_s, sim.work_done_s, fast.unwrapped.slots.slot_job)
    assert before[:2] == after[:2]
    assert np.array_equal(before[2], after[2]) and np.array_equal(before[3], after[3])


def test_integer_and_float64_scores_match_python_path():
    fast, slow = _pair(max_jobs=20)
    rng = np.random.default_rng(3)
    _same(fast.reset(seed=0), slow.reset(seed=0), "reset")
    for i in range(80):
        m = fast.unwrapped.max_jobs
        # int8 negation wraps at -128: the compiled step must sort as the Python path does
        action = rng.integers(-128, 128, m).astype(np.int8) if i % 2 else rng.random(m) * 2 - 1
        for a, b in zip(fast.step(action), slow.step(action), strict=True):
            _same(a, b, f"step {i}")


def test_compiled_step_is_dropped_when_the_reward_or_its_normaliser_changes():
    fast, slow = _pair(trace="teaching-12")
    fast.reset(seed=0)
    slow.reset(seed=0)
    rng = np.random.default_rng(0)
    for i in range(30):
        if i == 5:  # a new normaliser: a new compiled step with it
            stale = fast.unwrapped._compiled
            for env in (fast, slow):
                env.unwrapped.jct_normaliser_s = 1000.0
        if i == 10:  # a callable the compiled step does not know: back to the Python path
            for env in (fast, slow):
                env.unwrapped.reward_fn = lambda t: float(len(t.active_before)) - t.interval_s
        action = _action("priority", rng, fast.unwrapped, i)
        for a, b in zip(fast.step(action), slow.step(action), strict=True):
            _same(a, b, f"step {i}")
        if fast.unwrapped.simulator.done:
            break
        assert (fast.unwrapped._compiled is None) == (i >= 10)
        if 5 <= i < 10:
            assert fast.unwrapped._compiled is not stale


def test_compiled_step_follows_a_new_trace():
    """A trace source that draws a new trace per episode: each reset builds a new simulator,
    and the compiled step must serve that one (not the previous trace's tables)."""
    from shockwave_gym.traces import Trace, TraceSource

    base = gym.make(ENV_ID, trace="teaching-12").unwrapped
    base.reset(seed=0)
    jobs = base.trace.jobs
    traces = [base.trace, Trace(name="fewer", jobs=jobs[: len(jobs) - 3])]

    class Alternate(TraceSource):
        max_num_jobs = len(jobs)

        def __init__(self):
            self.calls = 0

        def sample(self, rng):
            self.calls += 1
            return traces[self.calls % 2]

    fast = gym.make(ENV_ID, trace=Alternate(), gpus=base.gpus)
    slow = gym.make(ENV_ID, trace=Alternate(), gpus=base.gpus)
    slow.unwrapped._compiled_allowed = False
    rng = np.random.default_rng(1)
    for episode in range(3):
        _same(fast.reset(seed=episode), slow.reset(seed=episode), f"reset {episode}")
        for i in range(400):
            action = _action("priority", rng, fast.unwrapped, i)
            out = fast.step(action)
            for a, b in zip(out, slow.step(action), strict=True):
                _same(a, b, f"episode {episode} step {i}")
            assert fast.unwrapped._compiled.simulator is fast.unwrapped.simulator
            if out[2] or out[3]:
                break
