"""Action-noise factories for configs: the noise size is the action size, known only once the env exists.

A config holds ``{_target_: lit_bench.noise.normal, _partial_: true, std: 0.1}``; the harness completes the
partial with ``n_actions`` when it builds the algorithm.
"""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise


def normal(n_actions: int, std: float) -> NormalActionNoise:
    """Gaussian noise N(0, std) on each action dimension (the RL Zoo's ``noise_type: normal``)."""
    return NormalActionNoise(mean=np.zeros(n_actions), sigma=std * np.ones(n_actions))


def ornstein_uhlenbeck(n_actions: int, std: float) -> OrnsteinUhlenbeckActionNoise:
    """Ornstein-Uhlenbeck noise with scale ``std`` (the RL Zoo's ``noise_type: ornstein-uhlenbeck``)."""
    return OrnsteinUhlenbeckActionNoise(mean=np.zeros(n_actions), sigma=std * np.ones(n_actions))
