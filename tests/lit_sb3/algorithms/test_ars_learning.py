"""ARS reaches CartPole's reward threshold within the RL Zoo's budget and hyperparameters."""

from __future__ import annotations

import pytest

from lit_sb3 import ARS
from tests.lit_sb3.helpers import best_eval_reward

pytestmark = pytest.mark.learning

# rl-baselines3-zoo hyperparams/ars.yml, CartPole-v1: n_timesteps 5e4, LinearPolicy, n_delta 2 (the rest: defaults)
ARS_ZOO_CARTPOLE = dict(policy="LinearPolicy", n_delta=2)


def _best(seed: int) -> float:
    return best_eval_reward(ARS, "CartPole-v1", budget=50_000, threshold=475, seed=seed, eval_every=2_000,
                            **ARS_ZOO_CARTPOLE)


@pytest.mark.parametrize("seed", [0, 2])
def test_ars_solves_cartpole_within_50k(seed):
    """Default run: a few seconds per seed (early stop at the threshold)."""
    assert _best(seed) >= 475


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 3, 4])
def test_ars_solves_cartpole_within_50k_more_seeds(seed):
    assert _best(seed) >= 475
