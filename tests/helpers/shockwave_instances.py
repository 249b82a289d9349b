"""Random Shockwave planning instances for the program and solver tests."""

from __future__ import annotations

import numpy as np

from shockwave_agents.shockwave.instance import PlanningInstance


def random_instance(seed: int, n: int = 3, horizon: int = 3, gpus: int = 2, *, weights=False,
                    lower=False, loss=False, objective="authors", gang=None, gang_sizes=((1, 0.7), (2, 0.3)),
                    max_epochs=30, max_epoch_s=150.0, max_log_weight=4.0, max_floor=2.0) -> PlanningInstance:
    """A random instance; ``gang`` fixes the gang sizes instead of drawing them from
    ``gang_sizes`` ((size, probability) pairs); the ``max_*`` bound the other draws."""
    rng = np.random.default_rng(seed)
    if gang is None:
        sizes, probabilities = zip(*gang_sizes, strict=True)
        gang = rng.choice(list(sizes), size=n, p=list(probabilities)).astype(np.int64)
    total = rng.integers(4, max_epochs, size=n).astype(np.float64)
    done = np.floor(total * rng.uniform(0.0, 0.7, size=n))
    mean_epoch = rng.uniform(20.0, max_epoch_s, size=n)
    remaining = (total - done) * mean_epoch * rng.uniform(0.8, 1.2, size=n)
    if objective == "authors":
        nsw_coef, makespan = 1.0 / (n * horizon), 1e-3
    else:
        nsw_coef, makespan = 1.0 / n, 3.0 / remaining.max()
    return PlanningInstance(
        job_ids=np.arange(n), gang=gang, epochs_total=total, epochs_done=done,
        mean_epoch_s=mean_epoch, remaining_s=remaining, gpus=gpus, rounds=horizon, round_s=120.0,
        nsw_coef=nsw_coef, makespan_coef_per_s=makespan,
        log_weights=rng.uniform(0.0, max_log_weight, size=n) if weights else None,
        min_epochs=np.minimum(total - done, rng.uniform(0.0, max_floor, size=n)) if lower else None,
        round0_loss_s=np.where(rng.random(n) < 0.5, 20.0, 0.0) if loss else None,
    )
