"""PPO and A2C reach CartPole's reward threshold with the RL Zoo's tuned hyperparameters."""

from __future__ import annotations

import pytest
from stable_baselines3.common.utils import LinearSchedule

from lit_sb3 import A2C, PPO
from tests.lit_sb3.helpers import best_eval_reward

pytestmark = pytest.mark.learning

# rl-baselines3-zoo hyperparams/ppo.yml, CartPole-v1 (lin_0.001 / lin_0.2 are linear decays to 0)
PPO_ZOO_CARTPOLE = dict(
    n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
    learning_rate=LinearSchedule(1e-3, 0.0, 1.0), clip_range=LinearSchedule(0.2, 0.0, 1.0),
)
# rl-baselines3-zoo hyperparams/a2c.yml, CartPole-v1 (budget 5e5)
A2C_ZOO_CARTPOLE = dict(n_envs=8, ent_coef=0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppo_solves_cartpole_within_100k(seed):
    best = best_eval_reward(PPO, "CartPole-v1", budget=100_000, threshold=475, seed=seed, **PPO_ZOO_CARTPOLE)
    assert best >= 475


def test_a2c_learns_cartpole_quickly():
    """Fast check for the default run: far above a random policy (~22) within 100k steps."""
    best = best_eval_reward(A2C, "CartPole-v1", budget=100_000, threshold=200, seed=0, **A2C_ZOO_CARTPOLE)
    assert best >= 200


@pytest.mark.slow
def test_a2c_solves_cartpole_within_zoo_budget_2_of_3_seeds():
    results = [
        best_eval_reward(A2C, "CartPole-v1", budget=500_000, threshold=475, seed=seed, eval_every=10_000,
                         **A2C_ZOO_CARTPOLE)
        for seed in (0, 1, 2)
    ]
    assert sum(r >= 475 for r in results) >= 2, results
