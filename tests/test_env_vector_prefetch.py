"""Episode prefetching (shockwave_gym/env/vector/prefetch.py): the worker's episodes are the
ones the env would draw in-process (same observations, rewards, infos and RNG states, across
seeded resets, masked resets and clusters whose source cannot be prefetched); its errors
surface at the same reset; it stops on close, when the env is dropped, when training ends or
raises, and when its parent dies; ``"auto"`` starts none on one CPU."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from helpers.vector import BACKENDS, assert_same, random_actions  # noqa: E402

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym.env.vector import prefetch
from shockwave_gym.env.vector.vector_env import ClusterVectorEnv
from shockwave_gym.errors import InputError
from shockwave_gym.traces import FileTraceSource, GeneratedTraceSource, GeneratorConfig
from shockwave_gym.training.workload import TrainingTraceSource, Workload

SMALL = Workload(gpus=8, num_jobs_range=(6, 10), arrival_rate_range_per_hour=(60.0, 120.0), max_duration_h=0.5)
ROOT = Path(__file__).resolve().parents[1]


def cluster_kwargs(mode: str) -> list[dict]:
    common = {"action_mode": mode, "max_jobs": 16}
    generated = GeneratedTraceSource(GeneratorConfig(num_jobs=8, seed=0, max_duration_h=0.5), num_jobs_range=(4, 8))
    return [
        {**common, "trace": TrainingTraceSource(SMALL), "gpus": 8},
        {**common, "trace": generated, "gpus": 8},
        {**common, "trace": "teaching-12"},  # a file source: drawn in-process
        {**common, "trace": TrainingTraceSource(SMALL), "gpus": 8, "reward": {"jct": 1.0, "ftf": 0.2}},
    ]


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (reaped, or a zombie awaiting its new parent)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def wait_gone(pid: int, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    return gone(pid)


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ["priority", "sequential"])
def test_prefetched_episodes_equal_in_process_ones(mode, compiled):
    kwargs = cluster_kwargs(mode)
    envs = [ClusterVectorEnv.from_env_kwargs(kwargs, autoreset_mode=AutoresetMode.SAME_STEP,
                                             max_episode_steps=60, prefetch=flag) for flag in (False, True)]
    plain, fetched = envs
    assert plain._prefetcher is None and fetched._prefetcher is not None
    assert fetched._prefetch_rows.tolist() == [True, True, False, True]
    for env in envs:
        out = env.reset(seed=11)
    assert_same(plain.reset(seed=11), out, "reset")
    rng = np.random.default_rng(0)
    ended = 0
    for t in range(400):
        if t == 150:  # a seeded reset restarts every stream
            assert_same(plain.reset(seed=[5, 6, 7, 8]), fetched.reset(seed=[5, 6, 7, 8]), "seeded reset")
        if t == 250:  # reset some clusters only, without a seed: the streams go on
            options = {"reset_mask": np.array([True, False, True, False])}
            assert_same(plain.reset(options=options), fetched.reset(options=options), "masked reset")
        actions = random_actions(mode, plain.action_masks(), rng)
        got, want = fetched.step(actions), plain.step(actions)
        assert_same(got, want, f"step {t}")
        ended += int(np.count_nonzero(want[2] | want[3]))
    assert ended >= 20
    for i in range(len(kwargs)):  # the env adopted the worker's RNG states
        assert fetched._np_random[i].bit_generator.state == plain._np_random[i].bit_generator.state
    for env in envs:
        env.close()


def failing_sample(self, rng):
    """TrainingTraceSource.sample, failing on the draws whose seed is a multiple of 4."""
    trace = ORIGINAL_SAMPLE(self, rng)
    if int(trace.name.split("-")[1]) % 4 == 0:
        raise InputError(f"refused {trace.name}")
    return trace


ORIGINAL_SAMPLE = TrainingTraceSource.sample


def test_a_failed_draw_is_raised_at_the_same_step(monkeypatch):
    # the worker is forked, so it draws with the patched method too
    monkeypatch.setattr(TrainingTraceSource, "sample", failing_sample)
    kwargs = [{"trace": TrainingTraceSource(SMALL), "gpus": 8, "action_mode": "priority", "max_jobs": 12}] * 2
    outcomes = []
    for flag in (False, True):
        env = ClusterVectorEnv.from_env_kwargs(kwargs, autoreset_mode=AutoresetMode.SAME_STEP, prefetch=flag)
        rng = np.random.default_rng(1)
        steps = 0
        try:
            env.reset(seed=[101, 202])
            while steps < 2000:
                env.step(random_actions("priority", env.action_masks(), rng))
                steps += 1
        except InputError as exc:
            outcomes.append((steps, str(exc)))
        else:
            outcomes.append(None)
        env.close()
    assert outcomes[0] is not None and outcomes[0] == outcomes[1]


def test_close_and_dropping_the_env_stop_the_worker():
    kwargs = {"trace": TrainingTraceSource(SMALL), "gpus": 8, "action_mode": "select", "max_jobs": 12}
    env = ClusterVectorEnv(2, prefetch=True, **kwargs)
    env.reset(seed=0)
    pid = env._prefetcher.pid
    assert not gone(pid)
    env.close()
    assert gone(pid) and env._prefetcher is None
    env = ClusterVectorEnv(2, prefetch=True, **kwargs)
    env.reset(seed=0)
    pid = env._prefetcher.pid
    del env
    gc.collect()
    assert wait_gone(pid)


def test_the_worker_exits_when_its_parent_is_killed():
    script = textwrap.dedent("""
        import os, signal, sys
        from shockwave_gym.env.vector.vector_env import ClusterVectorEnv
        from shockwave_gym.training.workload import TrainingTraceSource, Workload
        env = ClusterVectorEnv(2, prefetch=True, trace=TrainingTraceSource(Workload(gpus=8, num_jobs_range=(6, 10))),
                               gpus=8, action_mode="priority", max_jobs=12)
        env.reset(seed=0)
        print(env._prefetcher.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert wait_gone(int(run.stdout.split()[0]))


def test_auto_starts_no_worker_on_one_cpu(monkeypatch):
    kwargs = {"trace": TrainingTraceSource(SMALL), "gpus": 8, "action_mode": "priority", "max_jobs": 12}
    monkeypatch.setattr(prefetch, "available_cpus", lambda: 1)
    env = ClusterVectorEnv(2, prefetch="auto", **kwargs)
    assert env._prefetcher is None
    env.reset(seed=0)
    env.step(np.zeros((2, 12), np.float32))
    env.close()
    monkeypatch.setattr(prefetch, "available_cpus", lambda: 2)
    env = ClusterVectorEnv(2, prefetch="auto", **kwargs)
    assert env._prefetcher is not None
    env.close()
    # no source worth prefetching: no worker
    env = ClusterVectorEnv(2, prefetch=True, trace=FileTraceSource("teaching-12"), action_mode="priority")
    assert env._prefetcher is None
    env.close()
    with pytest.raises(InputError, match="prefetch must be"):
        ClusterVectorEnv(2, prefetch="yes", **kwargs)


def test_prefetchable_sources():
    from shockwave_gym.traces.suites import SUITES, SuiteTraceSource

    assert prefetch.prefetchable(TrainingTraceSource(SMALL))
    assert prefetch.prefetchable(GeneratedTraceSource(GeneratorConfig(num_jobs=4, seed=0)))
    assert not prefetch.prefetchable(FileTraceSource("teaching-12"))
    suite = SUITES[0]
    assert prefetch.prefetchable(SuiteTraceSource(suite, "train"))
    assert not prefetch.prefetchable(SuiteTraceSource(suite, "train", train_levels=2))
    assert not prefetch.prefetchable(SuiteTraceSource(suite, "validation"))


def small_config(tmp_path, name: str, **extra):
    from shockwave_gym.training.train import TrainConfig

    steps = 32 * 3 * 3
    return TrainConfig(out=str(tmp_path / name), algo="ppo", action_mode="priority", envs=3, timesteps=steps, n_steps=32,
                       batch_size=32, n_epochs=1, embed_dim=8, hidden_dim=16, workload=SMALL, eval_every=10 * steps,
                       checkpoint_every=10 * steps, eval_seeds=(5,), progress_every_s=1e9, **extra)


def test_training_learns_the_same_with_and_without_the_worker_and_leaves_no_process(tmp_path):
    from shockwave_gym.training.train import train

    reports = [train(small_config(tmp_path, f"prefetch-{flag}", prefetch=flag)) for flag in (False, True)]
    assert multiprocessing.active_children() == []
    weights = [(tmp_path / f"prefetch-{flag}" / "final_policy.npz").read_bytes() for flag in (False, True)]
    assert weights[0] == weights[1]
    assert reports[0]["episodes"] == reports[1]["episodes"] >= 3
    means = [{k: v for k, v in r["final"]["mean"].items() if k != "decision_ms_per_round"} for r in reports]
    assert means[0] == means[1] and means[0]["avg_jct_s"] > 0


def test_training_that_raises_stops_the_worker(tmp_path, monkeypatch):
    from shockwave_gym.training import progress
    from shockwave_gym.training.train import train

    def boom(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(progress.TrainingMonitor, "_on_step", boom)
    with pytest.raises(RuntimeError, match="boom"):
        train(small_config(tmp_path, "raises", prefetch=True))
    assert multiprocessing.active_children() == []


def test_episodes_too_large_for_the_shared_memory_go_through_the_pipe(monkeypatch):
    monkeypatch.setattr(prefetch, "ARENA_BYTES", 150_000)  # room for a few small episodes only
    kwargs = cluster_kwargs("priority")
    envs = [ClusterVectorEnv.from_env_kwargs(kwargs, autoreset_mode=AutoresetMode.SAME_STEP, prefetch=flag)
            for flag in (False, True)]
    assert_same(envs[0].reset(seed=3), envs[1].reset(seed=3), "reset")
    rng = np.random.default_rng(2)
    for t in range(200):
        actions = random_actions("priority", envs[0].action_masks(), rng)
        assert_same(envs[1].step(actions), envs[0].step(actions), f"step {t}")
    for env in envs:
        env.close()


def test_arena_allocates_first_fit_and_merges_freed_blocks():
    arena = prefetch._Arena(bytearray(1024))
    a = arena.put(b"x" * 100)  # rounded up to 128
    b = arena.put(b"y" * 64)
    c = arena.put(b"z" * 700)
    assert (a, b, c) == ((0, 100), (128, 64), (192, 700))
    assert arena.memory[128:192] == b"y" * 64
    assert arena.put(b"w" * 200) is None  # 1024 - 896 = 128 left
    arena.release(*a)
    arena.release(*c)
    assert arena.free == [(0, 128), (192, 832)]
    arena.release(*b)
    assert arena.free == [(0, 1024)]
    assert arena.put(b"v" * 1024) == (0, 1024) and arena.free == []


def test_announced_seeds_are_prepared_ahead_and_other_resets_ignore_them():
    from shockwave_gym.training.vec_adapter import NativeVecEnv

    kwargs = cluster_kwargs("priority")
    plain, fetched = (NativeVecEnv.from_env_kwargs(kwargs, prefetch=flag) for flag in (False, True))
    for env in (plain, fetched):
        env.seed(7)  # what SB3 does when it builds the model
    assert fetched.venv._announced == {0: 7, 1: 8, 3: 10}
    assert_same(plain.reset(), fetched.reset(), "reset")
    assert fetched.venv._announced == {}
    rng = np.random.default_rng(4)
    for t in range(150):
        actions = random_actions("priority", plain.venv.action_masks(), rng)
        assert_same(fetched.step(actions)[:3], plain.step(actions)[:3], f"step {t}")
    # announced, then reset with other seeds, and without any
    fetched.venv.announce_seeds([1, 2, 3, 4])
    assert_same(fetched.venv.reset(seed=20), plain.venv.reset(seed=20), "other seeds")
    fetched.venv.announce_seeds([1, 2, 3, 4])
    assert_same(fetched.venv.reset(), plain.venv.reset(), "no seed")
    for t in range(150):
        actions = random_actions("priority", plain.venv.action_masks(), rng)
        assert_same(fetched.venv.step(actions), plain.venv.step(actions), f"after step {t}")
    for i in range(len(kwargs)):
        assert fetched.venv._np_random[i].bit_generator.state == plain.venv._np_random[i].bit_generator.state
    plain.close()
    fetched.close()


def test_a_subclass_overriding_sample_is_not_prefetched_unless_it_says_so():
    class Counting(GeneratedTraceSource):
        def sample(self, rng):
            self.count = getattr(self, "count", 0) + 1
            return super().sample(rng)

    class Declared(Counting):
        fresh_samples = True

    config = GeneratorConfig(num_jobs=4, seed=0)
    assert not prefetch.prefetchable(Counting(config))
    assert prefetch.prefetchable(Declared(config))
