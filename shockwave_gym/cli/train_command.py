"""``shockwave-gym train``: RL (PPO / MaskablePPO), behaviour cloning of a planner, or a
cross-entropy search over the slot policy's linear skip term.

Examples::

    shockwave-gym train --algo ppo --timesteps 100000 --out runs/ppo
    shockwave-gym train --algo maskable_ppo --action-mode sequential --reward jct --out runs/mppo
    shockwave-gym train --algo bc --teacher shockwave --episodes 40 --out runs/distilled
    shockwave-gym train --algo cem --task balanced --suites canonical,canonical-unknown --obs-version 3 --out runs/cem

Torch and SB3 are imported only when the command runs.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from shockwave_gym.ascii_numbers import parse_float, parse_int
from shockwave_gym.cli.guard import ascii_float, ascii_int
from shockwave_gym.cli.run_command import seed_int
from shockwave_gym.errors import InputError, install_hint
from shockwave_gym.tasks import TASKS
from shockwave_gym.training.selection import OBJECTIVES

ALGO_CHOICES = ("ppo", "maskable_ppo", "bc", "cem")


def parse_reward(text: str) -> str | dict[str, float]:
    """``"jct"`` -> ``"jct"``; ``"jct=1,ftf=0.1"`` -> ``{"jct": 1.0, "ftf": 0.1}``."""
    if "=" not in text:
        return text
    weights = {}
    for part in text.split(","):
        name, _, raw = part.partition("=")
        name = name.strip()
        if not name or name in weights:
            raise InputError(f"--reward: {'a term is given twice' if name else 'a term has no name'} "
                             f"({name or part!r} in {text!r})")
        try:
            weights[name] = parse_float(raw)  # ASCII digits only
        except ValueError:
            raise InputError(f"--reward: weight of {name!r} must be a number, got {raw!r}") from None
    return weights


def parse_range(text: str, kind, label: str) -> tuple:
    """``"20:40"`` -> ``(20, 40)``; a single value gives a degenerate range."""
    lo, sep, hi = text.partition(":")
    kind = {int: parse_int, float: parse_float}.get(kind, kind)  # ASCII digits only
    try:
        values = (kind(lo), kind(hi if sep else lo))
    except ValueError:
        raise InputError(f"{label} expects LO:HI, got {text!r}") from None
    return values


def prior_name(text: str) -> str:
    """``--prior``: ``none`` or one of the priors (argparse reports the error); the option's
    default is None, so an explicit ``none`` can be told apart (:func:`prior_of`)."""
    from shockwave_agents.learned.priors import PRIORS

    if text == "none":
        return text
    if text not in PRIORS:
        raise argparse.ArgumentTypeError(f"must be none or one of {', '.join(PRIORS)}, got {text!r}")
    return text


def prior_of(args) -> str | None:
    """The prior a run starts from: None for no skip term (``--prior none`` or no ``--prior``)."""
    return None if args.prior in (None, "none") else args.prior


def add_parsers(subparsers) -> None:
    """The ``train`` command, its options in four groups."""
    parser = subparsers.add_parser(
        "train",
        help="train a learned scheduler (PPO, MaskablePPO, behaviour cloning or a cross-entropy search) on task suites",
        description=(
            "Train the permutation-invariant slot policy on the task suites' train split, or on freshly generated "
            "traces (seeds >= 2**32; validation traces use smaller seeds); --algo cem searches the skip weights on "
            "fixed train-split traces instead. Writes OUT/policy.npz + OUT/policy.json "
            "(weights only: load with --agent ppo --agent-opt path=OUT; for RL the best checkpoint on the "
            "validation traces, see --select), OUT/eval.json and, for RL, OUT/final_policy.* (last weights), "
            "OUT/model.zip (SB3, last weights, for resuming) and OUT/checkpoints/. Progress goes to stderr. "
            "Guide: docs/TRAINING.md."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--algo", choices=ALGO_CHOICES, default="ppo", help="ppo, maskable_ppo, bc (behaviour cloning) or cem (cross-entropy search over the "
                        "prior's linear skip weights, on whole episodes of the suites' fixed train seeds)")
    parser.add_argument("--action-mode", choices=("priority", "select", "sequential"), default=None,
                        help="default: priority for ppo and bc, sequential for maskable_ppo")
    parser.add_argument("--reward", default=None,
                        help="reward name or weights, e.g. jct or jct=1,ftf=0.1 (default: jct=0.1, the JCT term scaled "
                        "to about unit size per round)")
    parser.add_argument("--task", choices=tuple(TASKS), default=None,
                        help="a scored task (docs/TASKS.md): the reward is its weights x 0.1 and the checkpoint is "
                        "selected on its cost; not with --reward")
    parser.add_argument("--timesteps", type=ascii_int, default=100_000, help="RL env steps (for bc: PPO fine-tuning steps if --finetune)")
    parser.add_argument("--envs", type=ascii_int, default=None,
                        help="training envs: clusters batched in this process with --vec native (default 1), "
                        "worker processes with --vec subproc (default 2)")
    parser.add_argument("--vec", choices=("native", "single", "subproc"), default="native",
                        help="native: one batched vector env in this process; single: single envs one after the other "
                        "in this process (observation version 3, regime suites and the fair_share reward, which the "
                        "native env does not batch); subproc: one SubprocVecEnv worker per env")
    parser.add_argument("--obs-version", type=int, choices=(2, 3), default=2,
                        help="observation layout of the policy: 2 (reads each job's length: exact-regime suites only) "
                        "or 3 (length beliefs: every information regime, docs/ENV.md)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--seed", type=seed_int, default=0, help="seed of the run, an integer in [0, 2**32)")
    parser.add_argument("--suites", default="in-distribution",
                        help="train on these task suites' train split and select the checkpoint on their validation "
                        "split: a comma list of suite names (docs/SUITES.md), in-distribution, all, or none (train "
                        "on the generated workload below instead)")
    parser.add_argument("--val-traces", type=ascii_int, default=2, help="validation traces per suite")
    _add_workload_arguments(parser.add_argument_group("workload (generated traces, with --suites none)"))
    _add_network_arguments(parser.add_argument_group("network and PPO"))
    _add_evaluation_arguments(parser.add_argument_group("evaluation and checkpoints"))
    _add_cloning_arguments(parser.add_argument_group("behaviour cloning (--algo bc)"))
    _add_search_arguments(parser.add_argument_group("cross-entropy search (--algo cem)"))
    parser.set_defaults(func=train_command)
    RL_OPTIONS.update({dest: (flag, parser.get_default(dest)) for dest, flag in _RL_FLAGS.items()})


#: Options of RL training and the generated workload, which the search does not use: dest -> flag.
_RL_FLAGS = {"timesteps": "--timesteps", "envs": "--envs", "vec": "--vec", "gpus": "--gpus", "num_jobs": "--num-jobs",
             "arrival_rate": "--arrival-rate", "max_duration_h": "--max-duration-h", "no_mix": "--no-mix",
             "n_steps": "--n-steps", "batch_size": "--batch-size", "n_epochs": "--n-epochs",
             "learning_rate": "--learning-rate", "ent_coef": "--ent-coef", "gamma": "--gamma", "discount": "--discount",
             "log_std_init": "--log-std-init", "init_from": "--init-from", "trust": "--trust",
             "eval_every": "--eval-every", "select": "--select", "eval_seeds": "--eval-seeds",
             "checkpoint_every": "--checkpoint-every", "progress_every_s": "--progress-every-s"}
#: dest -> (flag, default), filled when the parser is built; refused at another value with --algo cem.
RL_OPTIONS: dict[str, tuple[str, object]] = {}


def _add_workload_arguments(group) -> None:
    """The generated workload's options (with ``--suites none``)."""
    group.add_argument("--gpus", type=ascii_int, default=12, help="cluster GPUs")
    group.add_argument("--num-jobs", default="20:40", help="jobs per training trace, LO:HI")
    group.add_argument("--arrival-rate", default="15:60", help="arrivals per hour, LO:HI")
    group.add_argument("--max-duration-h", type=ascii_float, default=2.0, help="longest job duration in isolation (hours)")
    group.add_argument("--no-mix", action="store_true", help="keep the default gang and mode mixes (no randomisation)")
    group.add_argument("--max-jobs", type=ascii_int, default=None, help="observation slots (default: largest job count)")


def _add_network_arguments(group) -> None:
    """The network's and PPO's options, and where the weights start."""
    group.add_argument("--policy", choices=("mlp", "attention"), default="mlp",
                       help="slot policy: mlp (per-slot MLP with mean/max pooling; a Gaussian over priority scores) or "
                       "attention (self-attention over the slots; a Plackett-Luce ordering in priority mode); "
                       "docs/TRAINING.md")
    group.add_argument("--embed-dim", type=ascii_int, default=None, help="slot embedding size (default 32 for RL, 64 for bc)")
    group.add_argument("--hidden-dim", type=ascii_int, default=None, help="hidden layer size (default 64 for RL, 128 for bc)")
    group.add_argument("--n-steps", type=ascii_int, default=None, help="rollout steps per env (default: 512 in total, "
                       "i.e. ceil(512 / envs) per env)")
    group.add_argument("--batch-size", type=ascii_int, default=None,
                       help="minibatch size (default: the rollout in the fewest equal minibatches of at most 256)")
    group.add_argument("--n-epochs", type=ascii_int, default=10, help="PPO epochs per rollout")
    group.add_argument("--learning-rate", type=ascii_float, default=3e-4, help="PPO learning rate")
    group.add_argument("--ent-coef", type=ascii_float, default=0.0, help="entropy bonus")
    group.add_argument("--gamma", type=ascii_float, default=0.995, help="discount (per round with --discount rounds)")
    group.add_argument("--discount", choices=("rounds", "steps"), default="rounds",
                       help="rounds: a step that covered n rounds (skip_trivial) is discounted by gamma**n, a "
                       "sequential pick that closes no round by 1 (semi-MDP); steps: gamma per env step")
    group.add_argument("--log-std-init", type=ascii_float, default=None,
                       help="PPO: initial log-std of the priority scores (default -0.5, or -2 with --prior)")
    group.add_argument("--prior", default=None, type=prior_name,
                       help="start of the policy's linear skip term (residual learning): none (no skip term), "
                       "zero (a skip term starting at 0), srtf (the initial policy schedules exactly like SRTF; "
                       "training learns a residual), srtf-fair (SRTF bent towards the jobs projected to finish least "
                       "fairly), srtf-gang (SRTF bent towards small gangs) or wsrpt (smallest (remaining time + 1 min) x gang "
                       "first, about weighted SRPT's order; observation version 2 or 3). Recorded in policy.json. "
                       "Default: none; with --algo cem, wsrpt (the search needs a prior: none is refused)")
    group.add_argument("--init-from", default=None, help="start from these weights (policy.npz/.json pair or its directory; "
                       "an SB3 .zip only with --trust)")
    group.add_argument("--trust", action="store_true",
                       help="allow --init-from to be an SB3 .zip: loading it unpickles the file, which can run "
                       "arbitrary code, so only for zips you made yourself")


def _add_evaluation_arguments(group) -> None:
    """Validation, checkpoint selection and progress options."""
    group.add_argument("--eval-every", type=ascii_int, default=10_000, help="evaluate on the validation traces every N steps")
    group.add_argument("--select", choices=OBJECTIVES, default=None,
                       help="checkpoint selection on the validation traces: jct (avg JCT / FIFO's), fair "
                       "(worst FTF / FIFO's + unfair fraction, both with the contention-based rho of the Shockwave paper's code, "
                       "JCT above FIFO's penalised), or a scored task's cost / FIFO's (fairness, balanced); default: the "
                       "--task's, else jct; OUT/policy.* is the best")
    group.add_argument("--eval-seeds", type=ascii_int, nargs="+", default=[1001, 1002, 1003], help="held-out trace seeds (< 2**32)")
    group.add_argument("--checkpoint-every", type=ascii_int, default=50_000, help="checkpoint every N steps")
    group.add_argument("--progress-every-s", type=ascii_float, default=15.0, help="seconds between progress lines")


#: Behaviour cloning's options: dest -> (flag, default); refused at another value with another --algo
CLONING_OPTIONS: dict[str, tuple[str, object]] = {}


def _recording(group, options: dict) -> None:
    """Make ``group.add_argument`` also record each option's (flag, default) in ``options``."""
    add = group.add_argument

    def recorded(*flags, **kwargs):
        action = add(*flags, **kwargs)
        options[action.dest] = (flags[0], action.default)
        return action

    group.add_argument = recorded


def _changed(args, options: dict) -> list[str]:
    """The flags of ``options`` given at a value other than their default."""
    return [flag for dest, (flag, default) in options.items() if getattr(args, dest) != default]


def _add_cloning_arguments(group) -> None:
    """Behaviour cloning's options (``--algo bc``), recorded in :data:`CLONING_OPTIONS`."""
    _recording(group, CLONING_OPTIONS)
    group.add_argument("--teacher", default="shockwave", help="agent to imitate")
    group.add_argument("--teacher-opt", action="append", default=[], metavar="KEY=VALUE", help="teacher option (repeatable)")
    group.add_argument("--episodes", type=ascii_int, default=40, help="training traces the teacher plays")
    group.add_argument("--bc-epochs", type=ascii_int, default=40, help="supervised epochs")
    group.add_argument("--bc-learning-rate", type=ascii_float, default=1e-3, help="supervised learning rate")
    group.add_argument("--bc-loss", choices=("bce", "select"), default="bce",
                       help="bce: per-slot cross-entropy; select: plus each picked job against the ones left out")
    group.add_argument("--bc-fit-all", action="store_true",
                       help="fit on every recorded episode (default: the last 10%% are held out for the reported "
                       "validation loss, which after DAgger leaves out the newest rounds)")
    group.add_argument("--dagger-iterations", type=ascii_int, default=0, help="DAgger rounds (student plays, teacher labels)")
    group.add_argument("--dagger-episodes", type=ascii_int, default=10, help="traces per DAgger round")
    group.add_argument("--workers", type=ascii_int, default=1, help="recording processes")
    group.add_argument("--dataset", default=None, help="reuse a recording (.npz from an earlier bc run)")
    group.add_argument("--finetune", action="store_true", help="after cloning, fine-tune with PPO for --timesteps steps")


#: The search's options: dest -> (flag, default); refused at another value with another --algo
SEARCH_OPTIONS: dict[str, tuple[str, object]] = {}


def _add_search_arguments(group) -> None:
    """The cross-entropy search's options (``--algo cem``), recorded in :data:`SEARCH_OPTIONS`."""
    _recording(group, SEARCH_OPTIONS)
    add = group.add_argument
    add("--train-traces", type=ascii_int, default=4, help="fixed train-split traces per suite played by every candidate")
    add("--cem-iterations", type=ascii_int, default=20, help="search iterations")
    add("--cem-population", type=ascii_int, default=16, help="candidate weight vectors per iteration")
    add("--cem-elite", type=ascii_int, default=4, help="best candidates the next iteration's Gaussian is fitted to")
    add("--cem-std", type=ascii_float, default=0.3, help="the Gaussian's starting standard deviation per weight")
    add("--cem-workers", type=ascii_int, default=1, help="processes the training episodes are split among")


def require_rl_extra(algo: str, finetune: bool = False) -> None:
    """Refuse to train when the ``rl`` extra is not installed (one line, not an ImportError)."""
    import importlib.util

    needed = ["torch"]
    if algo != "bc" or finetune:
        needed.append("stable_baselines3")
    if algo == "maskable_ppo":
        needed.append("sb3_contrib")
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise InputError(
            f"train --algo {algo} needs the 'rl' extra (missing: {', '.join(missing)}): {install_hint('rl')}"
        )


def train_command(args) -> int:
    from shockwave_gym.training.workload import Workload

    require_rl_extra(args.algo, args.finetune)

    command = "shockwave-gym " + shlex.join(sys.argv[1:]) if sys.argv[1:2] == ["train"] else ""
    workload = Workload(
        gpus=args.gpus,
        num_jobs_range=parse_range(args.num_jobs, int, "--num-jobs"),
        arrival_rate_range_per_hour=parse_range(args.arrival_rate, float, "--arrival-rate"),
        max_duration_h=args.max_duration_h,
        mix=not args.no_mix,
    )
    reward = parse_reward(args.reward) if args.reward is not None else None
    _refuse_unused(args)
    if args.algo == "cem":
        return _search(args, command)
    if args.algo == "bc":
        if prior_of(args) is not None:
            raise InputError(f"--prior {args.prior}: the prior starts an RL run (--algo ppo or maskable_ppo); "
                             "behaviour cloning (--algo bc) fits its own network from scratch")
        if args.policy != "mlp":
            raise InputError(f"--policy {args.policy}: behaviour cloning (--algo bc) fits the mlp policy")
        if args.task is not None:
            raise InputError(f"--task {args.task}: behaviour cloning (--algo bc) copies a teacher and has no reward; "
                             "use --reward for its --finetune stage")
        return _imitate(args, workload, reward, command)
    print("[train] loading torch and stable-baselines3", file=sys.stderr, flush=True)
    from shockwave_gym.training.train import TrainConfig, train

    config = TrainConfig(
        out=args.out, algo=args.algo, action_mode=args.action_mode, **({} if reward is None else {"reward": reward}),
        timesteps=args.timesteps, envs=args.envs, vec=args.vec, seed=args.seed, workload=workload, max_jobs=args.max_jobs,
        suites=None if args.suites == "none" else args.suites, val_traces=args.val_traces,
        **_network_sizes(args), n_steps=args.n_steps, batch_size=args.batch_size, n_epochs=args.n_epochs, learning_rate=args.learning_rate,
        gamma=args.gamma, discount=args.discount, ent_coef=args.ent_coef, log_std_init=args.log_std_init,
        eval_every=args.eval_every, eval_seeds=tuple(args.eval_seeds), select=args.select,
        checkpoint_every=args.checkpoint_every, init_from=args.init_from, trust_init=args.trust,
        progress_every_s=args.progress_every_s, command=command, prior=prior_of(args), task=args.task,
        policy=args.policy, obs_version=args.obs_version,
    )
    report = train(config)
    _print_summary(args.out, report["selected"], report["fifo"])
    return 0


#: The generated workload's options (in RL_OPTIONS): used with --suites none only.
WORKLOAD_FLAGS = ("gpus", "num_jobs", "arrival_rate", "max_duration_h", "no_mix", "eval_seeds")
#: The RL run's options: RL_OPTIONS but the workload's; unused by --algo bc without --finetune.
PPO_FLAGS = tuple(dest for dest in _RL_FLAGS if dest not in WORKLOAD_FLAGS)


def _network_sizes(args) -> dict:
    """``--embed-dim`` / ``--hidden-dim`` where given; each algorithm's config has its defaults."""
    return {name: getattr(args, name) for name in ("embed_dim", "hidden_dim") if getattr(args, name) is not None}


def _refuse_unused(args) -> None:
    """Options the run would ignore are refused, each group in one line: another algorithm's
    options, the RL and workload options under --algo cem, the workload's without --suites
    none, PPO's under --algo bc without --finetune."""
    groups = [(CLONING_OPTIONS, args.algo != "bc", f"behaviour cloning options, for --algo bc only (got --algo {args.algo})"),
              (SEARCH_OPTIONS, args.algo != "cem", f"search options, for --algo cem only (got --algo {args.algo})"),
              (RL_OPTIONS, args.algo == "cem", "RL and workload options, which --algo cem does not use"),
              ({dest: RL_OPTIONS[dest] for dest in WORKLOAD_FLAGS}, args.suites != "none",
               f"options of the generated workload, used with --suites none only (got --suites {args.suites})"),
              ({**{dest: RL_OPTIONS[dest] for dest in PPO_FLAGS}, "reward": ("--reward", None)},
               args.algo == "bc" and not args.finetune, "PPO options, which --algo bc uses only with --finetune")]
    for options, unused, why in groups:
        given = _changed(args, options) if unused else []
        if given:
            raise InputError(f"{', '.join(given)}: {why}")


def _search(args, command: str) -> int:
    """``--algo cem``: the search has no reward, no PPO and no generated workload."""
    from shockwave_gym.training.cem import CEMConfig, run_cem

    if args.task is None or args.reward is not None:
        raise InputError("--algo cem searches for a scored task's lowest cost: give --task (not --reward)")
    if args.prior == "none":
        raise InputError("--prior none: the search tunes a prior's skip weights; give a prior (default wsrpt)")
    if args.suites in ("none", "in-distribution") or args.policy != "mlp" or args.action_mode not in (None, "priority"):
        raise InputError("--algo cem plays fixed suite traces with the mlp policy in priority mode: give --suites "
                         "(a comma list or all), no --policy attention, no --action-mode other than priority")
    config = CEMConfig(
        out=args.out, task=args.task, suites=args.suites, train_traces=args.train_traces, val_traces=args.val_traces,
        prior="wsrpt" if args.prior is None else args.prior, iterations=args.cem_iterations,
        population=args.cem_population, elite=args.cem_elite, init_std=args.cem_std, seed=args.seed,
        workers=args.cem_workers, obs_version=args.obs_version, max_jobs=args.max_jobs,
        **_network_sizes(args), command=command)
    report = run_cem(config)
    selected = {**report["selected"]["mean"], "decision_ms_per_round": report["selected_decision_ms_per_round"]}
    _print_summary(args.out, selected, report["fifo"]["mean"])
    return 0


def _imitate(args, workload, reward, command: str) -> int:
    from shockwave_gym.cli.run_command import parse_agent_options
    from shockwave_gym.training.imitation import ImitationConfig, run_imitation

    config = ImitationConfig(
        out=args.out, teacher=args.teacher, teacher_options=parse_agent_options(args.teacher_opt, "--teacher-opt"),
        episodes=args.episodes, dagger_iterations=args.dagger_iterations, dagger_episodes=args.dagger_episodes,
        workload=workload, suites=None if args.suites == "none" else args.suites, val_traces=args.val_traces,
        max_jobs=args.max_jobs, action_mode=args.action_mode or "priority",
        **_network_sizes(args), epochs=args.bc_epochs,
        learning_rate=args.bc_learning_rate, seed=args.seed, workers=args.workers,
        eval_seeds=tuple(args.eval_seeds), command=command, obs_version=args.obs_version, loss=args.bc_loss,
        fit_all=args.bc_fit_all,
    )
    if args.finetune:  # refuse suites PPO cannot train on now, not after the cloning
        _finetune_config(args, config, workload, reward, command).tasks()
    report = run_imitation(config, dataset=args.dataset)
    _print_summary(args.out, report["student"]["mean"], report["teacher"]["mean"], reference_name=args.teacher)
    if args.finetune:
        from shockwave_gym.training.train import train

        tuned = _finetune_config(args, config, workload, reward, command)
        final = train(tuned)
        _print_summary(tuned.out, final["selected"], final["fifo"])
    return 0


def _finetune_config(args, config, workload, reward, command: str):
    """The PPO run that fine-tunes the clone (``--finetune``), from its weights."""
    from shockwave_gym.training.train import TrainConfig

    return TrainConfig(
        out=str(Path(args.out) / "finetune"), algo="ppo", action_mode=config.action_mode,
        **({} if reward is None else {"reward": reward}), timesteps=args.timesteps,
        envs=args.envs, vec=args.vec, seed=args.seed, workload=workload, max_jobs=config.max_jobs,
        suites=config.suites, val_traces=config.val_traces, obs_version=config.obs_version,
        embed_dim=config.embed_dim, hidden_dim=config.hidden_dim, n_steps=args.n_steps,
        batch_size=args.batch_size, n_epochs=args.n_epochs, learning_rate=args.learning_rate,
        gamma=args.gamma, discount=args.discount, ent_coef=args.ent_coef, log_std_init=args.log_std_init,
        eval_every=args.eval_every, eval_seeds=tuple(args.eval_seeds), select=args.select,
        checkpoint_every=args.checkpoint_every, init_from=str(Path(args.out) / "policy"),
        progress_every_s=args.progress_every_s, command=command,
    )


def _print_summary(out: str, mean: dict, reference: dict | None, reference_name: str = "fifo") -> None:

    def fmt(row, key, spec):
        value = (row or {}).get(key)
        return "n/a" if value is None else format(value, spec)

    if (Path(out) / "final_policy.npz").is_file():
        what = " (+ policy.json: the best validation checkpoint; last weights: final_policy.npz)"
    else:
        what = " (+ policy.json)"
    print(f"policy: {Path(out) / 'policy.npz'}{what}; metrics: {Path(out) / 'eval.json'}")
    for label, row in (("policy", mean), (reference_name, reference)):
        print(f"{label:>12}: avg JCT {fmt(row, 'avg_jct_s', ',.0f')} s, makespan {fmt(row, 'makespan_s', ',.0f')} s, "
              f"worst FTF {fmt(row, 'worst_ftf', '.2f')}, unfair {fmt(row, 'unfair_fraction', '.1%')} "
              f"(contention rho: {fmt(row, 'unfair_fraction_themis', '.1%')}), "
              f"{fmt(row, 'decision_ms_per_round', '.2f')} ms/decision")
