"""Bad agent options are input errors naming the option (exit 2, one line, from the CLI), and
good ones keep their meaning: the elastic agents' numeric knobs, ``las``'s queue thresholds,
and every boolean option (strict: ``oracle=no`` is an error, not ``oracle=True``)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_agents.gavel.mechanism import GavelMechanism
from shockwave_agents.gavel.typed_mechanism import TypedGavelMechanism
from shockwave_gym.cli import main
from shockwave_gym.errors import InputError
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import load_trace

#: (agent, option) for every boolean option an agent takes.
FLAGS = [
    ("fifo", "backfill"), ("srtf", "oracle"), ("srtf", "backfill"), ("wsrpt", "oracle"), ("wsrpt", "backfill"),
    ("las", "backfill"), ("tiresias", "backfill"), ("gittins", "backfill"),
    ("fair-share", "backfill"), ("fair-share", "relative"), ("fair-share", "oracle"),
    ("gavel", "hold_unallocated_gpus"), ("gavel", "count_restart_overhead"), ("gavel", "heterogeneity_aware"),
    ("themis", "hold_unallocated_gpus"), ("gavel-wc", "count_restart_overhead"), ("mst-wc", "heterogeneity_aware"),
]
NOT_BOOLEANS = ["no", "yes", "false", "true", "", 2, -1, 0.0, 1.0, None, [True], np.int64(2)]


def re_repr(value) -> str:
    """``repr(value)`` as a regular expression matching it literally."""
    return re.escape(repr(value))


@pytest.mark.parametrize(("name", "options", "option"), [
    ("pollux", {"p": 5}, "p"),
    ("pollux", {"p": float("nan")}, "p"),
    ("pollux", {"p": "high"}, "p"),
    ("sia", {"p": 5}, "p"),
    ("sia", {"p": 0}, "p"),
    ("sia", {"restart": 1}, "restart"),
    ("sia", {"restart": -0.5}, "restart"),
    ("elastic-srpt", {"efficiency": 7}, "efficiency"),
    ("elastic-srpt", {"efficiency": True}, "efficiency"),
])
def test_bad_elastic_options_are_input_errors(name, options, option):
    with pytest.raises(InputError, match=rf"^{name}: {option} must be") as caught:
        make_agent(name, **options)
    assert isinstance(caught.value, ValueError)  # still caught where a ValueError was


@pytest.mark.parametrize("value", [3600, 3600.0, "abc", "3600", None, [None], [float("nan")], [math.inf],
                                   [0], [-1.0], [100, 50], [5, 5], [True], ["100"], {"a": 1}, [[100]]],
                         ids=repr)
@pytest.mark.parametrize("name", ["las", "tiresias"])
def test_bad_queue_thresholds_are_input_errors(name, value):
    with pytest.raises(InputError, match="queue_thresholds_gpu_s") as caught:
        make_agent(name, queue_thresholds_gpu_s=value)
    assert repr(value) in str(caught.value)


@pytest.mark.parametrize(("value", "expected"), [
    ((3600.0,), [3600.0]), ([100, 5000], [100.0, 5000.0]), ([0.5, 1e9], [0.5, 1e9]),
    (np.array([10, 20]), [10.0, 20.0]), ([np.float32(7.5)], [7.5]), ([], []),
])
def test_good_queue_thresholds_are_kept(value, expected):
    agent = make_agent("las", queue_thresholds_gpu_s=value)
    assert agent.queue_thresholds_gpu_s.dtype == np.float64
    assert agent.queue_thresholds_gpu_s.tolist() == expected


@pytest.mark.parametrize("value", NOT_BOOLEANS, ids=repr)
@pytest.mark.parametrize(("name", "option"), FLAGS, ids=[f"{n}-{o}" for n, o in FLAGS])
def test_boolean_options_reject_anything_but_a_bool(name, option, value):
    with pytest.raises(InputError, match=rf"^{option} must be true or false, got {re_repr(value)}$"):
        make_agent(name, **{option: value})


@pytest.mark.parametrize("value", [True, False, np.True_, np.False_, 0, 1, np.int64(1)], ids=repr)
@pytest.mark.parametrize(("name", "option"), FLAGS, ids=[f"{n}-{o}" for n, o in FLAGS])
def test_boolean_options_accept_bools(name, option, value):
    stored = getattr(make_agent(name, **{option: value}), option)
    assert type(stored) is bool and stored == bool(value)


@pytest.mark.parametrize("option", ["restart_aware", "restart_in_program", "rank_on_feasible_path", "gang_weighted_nsw",
                                    "warm_from_previous", "record_plans", "authors_clock_calibration"])
def test_shockwave_boolean_options_reject_anything_but_a_bool(option):
    for value in ("no", 2, None):
        with pytest.raises(InputError, match=rf"^{option} must be true or false, got {re_repr(value)}$"):
            make_agent("shockwave", **{option: value})
    for value, stored in ((False, False), (0, False), (np.True_, True)):
        assert getattr(make_agent("shockwave", **{option: value}).config, option) is stored


def test_the_mechanisms_reject_a_non_boolean_hold():
    with pytest.raises(InputError, match="hold_unallocated_gpus must be true or false"):
        GavelMechanism(2, gpus=1, hold_unallocated_gpus="no")
    with pytest.raises(InputError, match="hold_unallocated_gpus must be true or false"):
        TypedGavelMechanism(2, np.array([1, 1]), min_recompute_interval_s=0.0, initial_credit_s=0.0,
                            hold_unallocated_gpus=2)
    assert GavelMechanism(2, gpus=1).hold_unallocated_gpus is True


@pytest.mark.parametrize(("agent", "option", "expected"), [
    ("pollux", "p=5", "pollux: p must be a finite number <= 1, got 5"),
    ("sia", "p=5", "sia: p must be in (0, 1], got 5"),
    ("elastic-srpt", "efficiency=7", "elastic-srpt: efficiency must be in [0, 1], got 7"),
    ("las", "queue_thresholds_gpu_s=3600", "queue_thresholds_gpu_s"),
    ("las", "queue_thresholds_gpu_s=abc", "queue_thresholds_gpu_s"),
    ("las", "queue_thresholds_gpu_s=[NaN]", "queue_thresholds_gpu_s"),
    ("srtf", "oracle=no", "oracle must be true or false, got 'no'"),
    ("fair-share", "relative=no", "relative must be true or false, got 'no'"),
    ("gavel", "hold_unallocated_gpus=2", "hold_unallocated_gpus must be true or false, got 2"),
])
def test_cli_reports_a_bad_option_in_one_line(agent, option, expected, capsys, monkeypatch):
    monkeypatch.delenv("SHOCKWAVE_GYM_DEBUG", raising=False)
    code = main(["run", "--agent", agent, "--trace", "teaching-12", "--agent-opt", option])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert expected in lines[0]


def _decisions(agent) -> list[list[int]]:
    """The job ids ``agent`` picks at every round of teaching-12 on 4 GPUs."""
    picks, act = [], agent.act

    def recorded(view):
        choice = act(view)
        picks.append(sorted(np.asarray(choice).tolist()))
        return choice

    agent.act = recorded
    run_episode(load_trace("teaching-12", gpus=4), agent, SimConfig(gpus=4), progress=False)
    return picks


def test_fair_share_relative_is_honoured():
    default = _decisions(make_agent("fair-share"))
    assert _decisions(make_agent("fair-share", relative=True)) == default
    absolute = _decisions(make_agent("fair-share", relative=False))
    assert absolute != default  # the option changes the order on this trace
    assert _decisions(make_agent("fair-share", relative=np.False_)) == absolute


@pytest.mark.parametrize("name", ["srtf", "wsrpt", "las"])
def test_explicit_defaults_decide_as_the_defaults(name):
    default = _decisions(make_agent(name))
    assert _decisions(make_agent(name, backfill=True)) == default
    if name != "las":
        assert _decisions(make_agent(name, oracle=False)) == default


def test_srtf_backfill_false_is_honoured():
    assert _decisions(make_agent("srtf", backfill=False)) != _decisions(make_agent("srtf"))


def test_cli_accepts_json_booleans(capsys):
    assert main(["run", "--agent", "fair-share", "--trace", "teaching-12", "--agent-opt", "relative=false"]) == 0
    assert main(["run", "--agent", "srtf", "--trace", "teaching-12", "--agent-opt", "backfill=true"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize(("name", "option", "value"), [
    ("gavel", "min_recompute_interval_s", "abc"), ("gavel", "min_recompute_interval_s", -1.0),
    ("themis", "min_recompute_interval_s", float("inf")), ("allox", "alpha", "x"), ("allox", "alpha", float("nan")),
    ("allox", "alpha", 1.5),
])
def test_numeric_mechanism_options_are_input_errors(name, option, value):
    with pytest.raises(InputError, match=rf"^{option} must be a finite number"):
        make_agent(name, **{option: value})
