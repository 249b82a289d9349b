"""Random observations and visibly-weighted slot policies for the learned-agent tests (torch
required: import after ``pytest.importorskip("torch")``)."""

from __future__ import annotations

import numpy as np
import torch


def random_obs(max_jobs: int, valid_slots: int, seed: int) -> dict[str, np.ndarray]:
    """A random observation in the default layout (the one ``build_policy`` builds for)."""
    from shockwave_gym.interface.observation import DEFAULT_OBSERVATION_VERSION, feature_names

    job_names, cluster_names = feature_names(DEFAULT_OBSERVATION_VERSION)
    rng = np.random.default_rng(seed)
    valid = np.zeros(max_jobs, np.int8)
    valid[rng.choice(max_jobs, valid_slots, replace=False)] = 1
    jobs = rng.uniform(0, 1, (max_jobs, len(job_names))).astype(np.float32) * valid[:, None]
    picked = (rng.uniform(size=max_jobs) < 0.3).astype(np.int8) * valid
    return {"jobs": jobs, "job_valid": valid, "picked": picked,
            "cluster": rng.uniform(0, 1, len(cluster_names)).astype(np.float32)}


def obs_to_tensors(obs: dict[str, np.ndarray]) -> dict:
    return {key: torch.from_numpy(np.asarray(value, dtype=np.float32)).unsqueeze(0) for key, value in obs.items()}


def perturbed(policy, seed: int = 0, scale: float = 0.1):
    """Replace the near-zero output layers (orthogonal gain 0.01) with visible weights, small
    enough that priority scores stay clear of tanh saturation, where float32 ties would make
    the env's order and the agent's differ by one ulp."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.copy_(scale * torch.randn(parameter.shape, generator=generator))
    return policy
