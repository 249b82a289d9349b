"""Learned schedulers: a permutation-invariant slot policy and the agents that run it.

* :mod:`~shockwave_agents.learned.policy` - the slot policy for PPO / MaskablePPO;
* :mod:`~shockwave_agents.learned.inference` - the same network in numpy, for deciding;
* :mod:`~shockwave_agents.learned.adapter` - :class:`PolicyAgent`, a policy as an agent;
* :mod:`~shockwave_agents.learned.weights` - weights-only save/load, SB3 zips with a warning;
* :mod:`~shockwave_agents.learned.pretrained` - the shipped ``ppo`` and
  ``shockwave-distilled`` agents.

Training these policies (RL, imitation) and evaluating them on held-out traces is in
:mod:`shockwave_gym.training`. Importing this
package does not import torch; the modules above do.
"""
