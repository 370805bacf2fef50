"""PPO and A2C reach CartPole's reward threshold with the RL Zoo's tuned hyperparameters."""

from __future__ import annotations

import pytest

from lit_sb3 import A2C, PPO
from tests.lit_sb3.helpers import best_eval_reward, zoo_settings

pytestmark = pytest.mark.learning

# the RL Zoo's CartPole-v1 entries (hyperparams/ppo.yml, a2c.yml) as conf/algo_env/ ports them
PPO_ZOO = zoo_settings("ppo", "CartPole")  # budget 1e5
A2C_ZOO = zoo_settings("a2c", "CartPole")  # budget 5e5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppo_solves_cartpole_within_100k(seed):
    best = best_eval_reward(
        PPO, "CartPole-v1", budget=PPO_ZOO.budget, threshold=475, seed=seed, **PPO_ZOO.hyperparameters
    )
    assert best >= 475


def test_a2c_learns_cartpole_quickly():
    """Fast check for the default run: far above a random policy (~22) within 100k steps."""
    best = best_eval_reward(A2C, "CartPole-v1", budget=100_000, threshold=200, seed=0, **A2C_ZOO.hyperparameters)
    assert best >= 200


@pytest.mark.slow
def test_a2c_solves_cartpole_within_zoo_budget_2_of_3_seeds():
    results = [
        best_eval_reward(
            A2C,
            "CartPole-v1",
            budget=A2C_ZOO.budget,
            threshold=475,
            seed=seed,
            eval_every=10_000,
            **A2C_ZOO.hyperparameters,
        )
        for seed in (0, 1, 2)
    ]
    assert sum(r >= 475 for r in results) >= 2, results
