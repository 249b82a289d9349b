"""One documented configuration object for the Shockwave planner.

The defaults are the authors' canonical configuration (their ``tacc_32gpus`` settings: T = 20
future rounds, k = 1e-3, lambda = 12, rho_max = 1, log breakpoints {0, .2, .4, .6, .8, 1}
with log 0 read as log 1e-6, re-plan every 8 rounds), with the solver swapped for HiGHS and
an absolute gap (docs/SEMANTICS.md). :meth:`ShockwaveConfig.normalized` gives our variant.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from shockwave_agents.options import flag
from shockwave_agents.shockwave.limits import WorkLimits
from shockwave_gym.errors import InputError

#: Solver backends by name; ``"auto"`` tries them in :data:`AUTO_SOLVER_ORDER`.
SOLVER_NAMES = ("auto", "highs", "cvxpy-highs", "mosek", "gurobi", "greedy")
#: Licensed commercial solvers first (when a licence really works), then HiGHS direct.
AUTO_SOLVER_ORDER = ("mosek", "gurobi", "highs")
OBJECTIVES = ("authors", "normalized")
#: ``numerics``: the published objective solved exactly, or the authors' effective numerics.
NUMERICS = ("faithful", "authors")
NOISE_MODES = ("sign", "uniform", "job")
RANK_METHODS = ("mip", "local", "hybrid")
#: ``counts_method``: how the homogeneous counts program is solved (:mod:`.exact_counts`).
COUNTS_METHODS = ("auto", "mip", "exact")
#: Default work limits (docs/SOLVERS.md, "Work limits"): branch-and-bound nodes of a main
#: solve and of a re-ranking solve, simplex or interior-point iterations of an LP solve.
MIP_NODE_LIMIT = 2000
RANK_NODE_LIMIT = 500
LP_ITERATION_LIMIT = 200_000
#: ``typed_share``: the fair share behind F_j on a typed cluster (:func:`.fair_share.typed_share_rate`).
TYPED_SHARES = ("water_filling", "per_job")
#: ``typed_ratio_basis``: the lateness ratio's basis on a typed cluster (None: ``ratio_basis``).
RATIO_BASES = ("finish_time", "jct")
#: ``typed_rank``: how a typed relaxed plan's rounds are ordered (docs/SHOCKWAVE_HETERO.md).
TYPED_RANKS = ("per_type", "list", "front")
#: ``typed_priority``: which jobs get the relaxed path's lateness priority on a typed cluster.
TYPED_PRIORITIES = ("late", "all")


@dataclass(frozen=True)
class ShockwaveConfig:
    """Every parameter of the Shockwave planner. Times are in seconds.

    Planning program (docs/SEMANTICS.md, "The Shockwave planner"):

    - ``planning_rounds`` (T): future rounds planned at each re-plan.
    - ``k``: weight of the makespan term ``k * max_j max(0, R_j - p_j * d_j)`` (R in seconds).
    - ``lam`` (lambda): priority exponent of jobs whose projected finish-time ratio exceeds
      ``rho_max`` on the relaxed path; ``lam_urgent`` replaces it for such jobs with less
      than one round of predicted work left.
    - ``rho_max``: finish-time-fairness bound of the constrained program.
    - ``log_breakpoints`` / ``log_zero_floor``: the piecewise-linear log utility (its value
      at 0 is ``log(log_zero_floor)``); concave, so modelled exactly by hypograph cuts.
    - ``share_momentum``: weight of the time-weighted history in the fair-share finish
      estimate F_j (the rest goes to the latest estimate).
    - ``replan_every_rounds``: periodic re-plan cadence (also re-plans on arrival,
      completion and when the plan runs out).

    ``objective``: ``"authors"`` is the published objective; ``"normalized"`` puts the
    NSW and makespan terms on comparable scales (:func:`.planner.objective_coefficients`),
    weighted by ``makespan_weight``. ``gang_weighted_nsw`` weights each job's log utility by
    its gang size, so a GPU's worth of progress counts the same for every job (unweighted NSW
    starves multi-GPU jobs, which the FTF metric does not excuse). ``horizon_clock``: "rounds" measures "now" as round index
    x round length (the authors), "time" uses the simulation clock. ``ratio_basis``:
    "finish_time" (the authors) compares projected and target finish *times*; "jct" compares
    them measured from the job's arrival, so a late arrival's wait weighs as much as an early
    one's. ``priority_log_cap``
    bounds the log of relaxed-path priorities (inf = the authors' unbounded ratio^lambda).

    Restart overhead (20 s when a job did not run in the previous round): with
    ``restart_aware`` the re-ranking and the work-conserving fill prefer, other things
    equal, jobs that ran in the last round (a restart costs a job a sixth of a round);
    ``restart_in_program`` models round 0's loss exactly inside the MIP (adds n binaries,
    much slower). ``rank_on_feasible_path`` also re-ranks plans of the constrained program
    (the authors re-rank only relaxed plans).

    ``numerics``: "faithful" solves the published program exactly; "authors" emulates the
    authors' implementation (:mod:`.numerics`): whole-epoch progress and a remaining-time
    estimate without the current epoch, and the makespan term dropped from relaxed plans where
    its range is below ``authors_rel_gap`` times the heaviest priority's term (1e-7, the
    solvers' default optimality tolerance; 0 = never). ``authors_clock_calibration``
    (authors numerics only, one GPU type): drift recalibration against a profile walked from
    round 0 of the simulation, as the authors' scheduler does
    (:class:`.numerics.RoundClockCalibration`), instead of from the job's own run time;
    ``authors_profile_rounding`` (the same scope): the estimates use epoch durations rounded
    to whole seconds, at least 1 s, as the authors' job profiles hold them. Faithful
    numerics ignore all three.

    Solver: ``solver`` is a name from :data:`SOLVER_NAMES`; ``mip_abs_gap`` is the absolute
    gap in units of one unit-weight job's log utility (``mip_rel_gap`` stays 0: a relative
    gap on this objective is dominated by the k*R term). Every solve stops on counts of work,
    never on the clock, so a plan is the same on any machine at any load: ``mip_node_limit``
    branch-and-bound nodes per main solve, ``rank_node_limit`` per re-ranking solve of the
    binary program, ``lp_iteration_limit`` simplex (or interior-point) iterations per LP
    solve. ``time_limit_s`` (main solves) and ``rank_time_limit_s`` (re-ranking solves) are
    opt-in wall-clock caps, None (off) by default: a solve that reaches one keeps the
    incumbent it holds then, which depends on the machine's speed and load. ``threads``:
    the solver's threads (1; more lets Gurobi's and MOSEK's results depend on the count).
    ``rank_method`` (:data:`RANK_METHODS`) is how re-ranking is solved: ``"mip"`` the binary
    program alone, ``"local"`` LP rounding and local search alone (cost independent of machine
    load), ``"hybrid"`` the local ranking polished by the binary program when the LP bound
    does not prove it and the program has at most ``rank_mip_max_columns`` columns
    (:mod:`.reranker`). ``warm_from_previous``: the relaxed solve's warm start may be the
    previous plan, shifted and topped up, when that beats the greedy plans (off by default:
    it starts HiGHS closer to the optimum but did not make it faster).

    Typed clusters only (ignored on one GPU type): ``typed_share`` is the fair share behind
    the finish targets F_j (:data:`TYPED_SHARES`, :func:`.fair_share.typed_share_rate`):
    ``"water_filling"`` the fair-share reference's equal share of GPUs (a gang-g job at water
    level ``lam`` runs ``min(g, lam) / g`` of the time), ``"per_job"`` an equal share of
    rounds per job whatever its gang, which makes multi-GPU jobs look late and prioritises
    them over single-GPU jobs (docs/SHOCKWAVE_HETERO.md, "Fairness against Gavel").
    ``typed_ratio_basis`` replaces ``ratio_basis`` on a typed cluster (None: the same basis):
    ``"jct"`` measures lateness as the projected fair-share rho, so a short job that waits
    becomes late as fast as the fairness measure says it does. ``typed_rank``
    (:data:`TYPED_RANKS`) orders a typed relaxed plan's rounds: ``"per_type"`` re-ranks each
    type's jobs planned on it alone (jobs planned on several types keep their rounds);
    ``"list"`` rebuilds the plan round by round from its counts, highest priority first
    (:func:`.typed_rank.list_rank_typed`).
    ``typed_makespan_scale`` multiplies the makespan term's coefficient on a typed cluster
    (either objective; 1: as on one type, 0: no makespan term).
    ``typed_rho_weight`` (beta >= 0) multiplies every job's relaxed-path weight by
    ``(median target JCT / its target JCT) ** beta`` (target JCT = F_j - arrival): a round of
    delay raises job j's fair-share rho by ``round_s / target JCT``, so jobs with short
    fair-share times weigh more in the plan and go earlier in it (0: off).
    ``typed_guarantee`` (alpha in [0, 1]) bounds each job's planned work on the relaxed path
    below by ``alpha`` x its fair-share work over the horizon, ``share_j T round_s``, capped by
    its remaining work (0: off; a plan that cannot meet it is made without it).
    ``typed_priority`` (:data:`TYPED_PRIORITIES`): ``"late"`` gives the priority
    ``ratio^lam`` to late jobs only (the authors' rule); ``"all"`` to every job, so jobs ahead
    of their target weigh less than 1.

    Prediction: ``noise`` is the multiplicative error of the remaining-time predictions
    (0.2 = +-20%); ``noise_mode="sign"`` multiplies by 1 +- noise with a fresh random sign at
    every prediction (the authors' robustness study), ``"uniform"`` by 1 + noise * U(-1, 1),
    ``"job"`` by 1 +- noise with one sign per job kept for the episode (persistent bias). ``drift_threshold``:
    durations are recalibrated when measured run time drifts more than this share from the
    throughput table.
    """

    planning_rounds: int = 20
    k: float = 1e-3
    lam: float = 12.0
    lam_urgent: float = 100.0
    rho_max: float = 1.0
    log_breakpoints: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    log_zero_floor: float = 1e-6
    share_momentum: float = 0.9
    replan_every_rounds: int = 8
    objective: str = "authors"
    horizon_clock: str = "rounds"
    ratio_basis: str = "finish_time"
    restart_aware: bool = False
    restart_in_program: bool = False
    rank_on_feasible_path: bool = False
    makespan_weight: float = 1.0
    gang_weighted_nsw: bool = False
    priority_log_cap: float = math.inf
    numerics: str = "faithful"
    authors_rel_gap: float = 1e-7
    authors_clock_calibration: bool = True
    authors_profile_rounding: bool = True
    solver: str = "auto"
    mip_abs_gap: float = 1e-4
    mip_node_limit: int = MIP_NODE_LIMIT
    rank_node_limit: int = RANK_NODE_LIMIT
    lp_iteration_limit: int = LP_ITERATION_LIMIT
    time_limit_s: float | None = None
    rank_time_limit_s: float | None = None
    rank_method: str = "local"
    rank_mip_max_columns: int = 2000
    counts_method: str = "auto"
    exact_counts_min_jobs: int = 200
    warm_from_previous: bool = False
    typed_share: str = "water_filling"
    typed_ratio_basis: str | None = "jct"
    typed_rank: str = "front"
    typed_makespan_scale: float = 1e-3
    typed_priority: str = "late"
    typed_rho_weight: float = 2.0
    typed_guarantee: float = 0.0
    threads: int = 1
    noise: float = 0.0
    noise_mode: str = "sign"
    drift_threshold: float = 0.4
    record_plans: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.planning_rounds, int) or self.planning_rounds < 1:
            raise InputError(f"planning_rounds must be an integer >= 1, got {self.planning_rounds!r}")
        if not isinstance(self.replan_every_rounds, int) or self.replan_every_rounds < 1:
            raise InputError(f"replan_every_rounds must be an integer >= 1, got {self.replan_every_rounds!r}")
        for name in ("k", "lam", "lam_urgent", "rho_max", "mip_abs_gap",
                     "noise", "drift_threshold", "makespan_weight", "authors_rel_gap", "typed_makespan_scale",
                     "typed_rho_weight"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise InputError(f"{name} must be a finite number >= 0, got {value!r}")
        for name in ("time_limit_s", "rank_time_limit_s"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value <= 0):
                raise InputError(f"{name} must be None (no wall-clock cap) or a number of seconds > 0, got {value!r}")
        for name in ("mip_node_limit", "rank_node_limit", "lp_iteration_limit"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{name} must be an integer >= 1, got {value!r}")
        if not (0.0 <= self.share_momentum <= 1.0):
            raise InputError(f"share_momentum must be in [0, 1], got {self.share_momentum!r}")
        if not (0.0 < self.log_zero_floor < 1.0):
            raise InputError(f"log_zero_floor must be in (0, 1), got {self.log_zero_floor!r}")
        points = tuple(float(b) for b in self.log_breakpoints)
        if len(points) < 2 or points[0] != 0.0 or points[-1] != 1.0 or any(b <= a for a, b in zip(points, points[1:], strict=False)):
            raise InputError(f"log_breakpoints must increase strictly from 0 to 1, got {self.log_breakpoints!r}")
        object.__setattr__(self, "log_breakpoints", points)
        if self.objective not in OBJECTIVES:
            raise InputError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.ratio_basis not in RATIO_BASES:
            raise InputError(f"ratio_basis must be 'finish_time' or 'jct', got {self.ratio_basis!r}")
        if self.horizon_clock not in ("rounds", "time"):
            raise InputError(f"horizon_clock must be 'rounds' or 'time', got {self.horizon_clock!r}")
        for name in ("authors_clock_calibration", "authors_profile_rounding", "restart_aware", "restart_in_program",
                     "rank_on_feasible_path", "gang_weighted_nsw", "warm_from_previous", "record_plans"):
            object.__setattr__(self, name, flag(name, getattr(self, name)))
        if self.numerics not in NUMERICS:
            raise InputError(f"numerics must be one of {NUMERICS}, got {self.numerics!r}")
        if self.solver not in SOLVER_NAMES:
            raise InputError(f"solver must be one of {SOLVER_NAMES}, got {self.solver!r}")
        if self.noise_mode not in NOISE_MODES:
            raise InputError(f"noise_mode must be one of {NOISE_MODES}, got {self.noise_mode!r}")
        if self.rank_method not in RANK_METHODS:
            raise InputError(f"rank_method must be one of {RANK_METHODS}, got {self.rank_method!r}")
        if isinstance(self.rank_mip_max_columns, bool) or not isinstance(self.rank_mip_max_columns, int) \
                or self.rank_mip_max_columns < 0:
            raise InputError(f"rank_mip_max_columns must be an integer >= 0, got {self.rank_mip_max_columns!r}")
        self._check_typed_options()
        if self.counts_method not in COUNTS_METHODS:
            raise InputError(f"counts_method must be one of {COUNTS_METHODS}, got {self.counts_method!r}")
        if isinstance(self.exact_counts_min_jobs, bool) or not isinstance(self.exact_counts_min_jobs, int) \
                or self.exact_counts_min_jobs < 0:
            raise InputError(f"exact_counts_min_jobs must be an integer >= 0, got {self.exact_counts_min_jobs!r}")
        if not isinstance(self.threads, int) or self.threads < 1:
            raise InputError(f"threads must be an integer >= 1, got {self.threads!r}")
        if not (self.priority_log_cap > 0):
            raise InputError(f"priority_log_cap must be > 0, got {self.priority_log_cap!r}")

    def _check_typed_options(self) -> None:
        """The options read only on a typed cluster (docs/SHOCKWAVE_HETERO.md)."""
        if self.typed_share not in TYPED_SHARES:
            raise InputError(f"typed_share must be one of {TYPED_SHARES}, got {self.typed_share!r}")
        if self.typed_ratio_basis is not None and self.typed_ratio_basis not in RATIO_BASES:
            raise InputError(f"typed_ratio_basis must be None, 'finish_time' or 'jct', got {self.typed_ratio_basis!r}")
        if self.typed_rank not in TYPED_RANKS:
            raise InputError(f"typed_rank must be one of {TYPED_RANKS}, got {self.typed_rank!r}")
        if not (isinstance(self.typed_guarantee, int | float) and not isinstance(self.typed_guarantee, bool)
                and 0.0 <= self.typed_guarantee <= 1.0):
            raise InputError(f"typed_guarantee must be a number in [0, 1], got {self.typed_guarantee!r}")
        if self.typed_priority not in TYPED_PRIORITIES:
            raise InputError(f"typed_priority must be one of {TYPED_PRIORITIES}, got {self.typed_priority!r}")

    @classmethod
    def authors(cls, **overrides) -> ShockwaveConfig:
        """The authors' canonical configuration (faithful variant), with overrides."""
        return cls.from_options(overrides)

    @classmethod
    def normalized(cls, **overrides) -> ShockwaveConfig:
        """Our variant: comparable NSW / makespan scales, JCT-based lateness ratios, wall-clock
        horizon, restart-aware ranking and fill. Overrides win."""
        base = {
            "objective": "normalized",
            "horizon_clock": "time",
            "ratio_basis": "jct",
            "restart_aware": True,
            "rank_on_feasible_path": True,
            "makespan_weight": 300.0,
        }
        base.update(overrides)
        return cls.from_options(base)

    @classmethod
    def fair(cls, **overrides) -> ShockwaveConfig:
        """Our variant tuned for the fairness-efficiency frontier: :meth:`normalized` with the
        authors' whole-epoch progress and estimates (``numerics="authors"``, which gives
        few-epoch jobs their head start, without the gap rule: the makespan term always binds)
        and a lighter makespan term (``makespan_weight=100``). It leaves out the authors'
        round-clock calibration and whole-second profiles, which starve late jobs (with them:
        worst FTF 1.62 canonical, 2.18 on the analogue). Overrides win."""
        base = {"numerics": "authors", "authors_rel_gap": 0.0, "makespan_weight": 100.0,
                "authors_clock_calibration": False, "authors_profile_rounding": False}
        base.update(overrides)
        return cls.normalized(**base)

    @classmethod
    def from_options(cls, options: dict) -> ShockwaveConfig:
        """Build from a dict of field names (as the CLI's ``--agent-opt`` gives them)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise InputError(f"unknown Shockwave option(s) {unknown}; known: {sorted(known)}")
        values = dict(options)
        if "log_breakpoints" in values and not isinstance(values["log_breakpoints"], tuple):
            values["log_breakpoints"] = tuple(values["log_breakpoints"])
        return cls(**values)

    def main_limits(self) -> WorkLimits:
        """The limits of each main solve (constrained and relaxed programs)."""
        return WorkLimits(self.mip_node_limit, self.lp_iteration_limit, self.time_limit_s)

    def rank_limits(self) -> WorkLimits:
        """The limits of each re-ranking solve (its LP relaxation and its binary program)."""
        return WorkLimits(self.rank_node_limit, self.lp_iteration_limit, self.rank_time_limit_s)

    def with_options(self, **changes) -> ShockwaveConfig:
        return replace(self, **changes)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["log_breakpoints"] = list(self.log_breakpoints)
        if not math.isfinite(out["priority_log_cap"]):
            out["priority_log_cap"] = None
        return out
