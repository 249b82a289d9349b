"""Learned schedulers: a permutation-invariant SB3 policy, RL training, distillation of Shockwave.

* :mod:`~shockwave_agents.learned.policy` - the slot policy for PPO / MaskablePPO;
* :mod:`~shockwave_agents.learned.adapter` - :class:`PolicyAgent`, a policy as an agent;
* :mod:`~shockwave_agents.learned.workload` - training and held-out generated traces;
* :mod:`~shockwave_agents.learned.train` - RL training (``shockwave-gym train``);
* :mod:`~shockwave_agents.learned.imitation` - behaviour cloning of a planner;
* :mod:`~shockwave_agents.learned.weights` - weights-only save/load, SB3 zips with a warning;
* :mod:`~shockwave_agents.learned.pretrained` - the shipped ``ppo`` and
  ``shockwave-distilled`` agents.

Importing this package does not import torch; the modules above do.
"""
