"""TQC, CrossQ and QR-DQN reach the RL Zoo thresholds with the Zoo settings (one seed by default, more ``slow``).

Hyperparameters are the RL Zoo's (rl-baselines3-zoo hyperparams/{tqc,crossq,qrdqn}.yml) where a test says "Zoo".
"""

from __future__ import annotations

import pytest

from lit_sb3 import QRDQN, TQC, CrossQ
from tests.lit_sb3.helpers import best_eval_reward

pytestmark = pytest.mark.learning

# Zoo Pendulum-v1 (tqc.yml): 20k steps, learning_rate 1e-3, otherwise sb3-contrib defaults
TQC_ZOO = {"learning_rate": 1e-3}
# Zoo Pendulum-v1 (crossq.yml): 20k steps, policy_delay 2, [256, 256] for actor and critics
CROSSQ_ZOO = {"policy_delay": 2, "policy_kwargs": {"net_arch": [256, 256]}}
# Zoo CartPole-v1 (qrdqn.yml), 50k steps
QRDQN_ZOO = {"learning_rate": 2.3e-3, "batch_size": 64, "buffer_size": 100_000, "learning_starts": 1000,
             "gamma": 0.99, "target_update_interval": 10, "train_freq": 256, "gradient_steps": 128,
             "exploration_fraction": 0.16, "exploration_final_eps": 0.04,
             "policy_kwargs": {"net_arch": [256, 256], "n_quantiles": 10}}


# "reaches X within N steps": evaluated every 2k (5k) steps, 10 deterministic episodes, stopping once X is reached.
# Seed 0 of each runs by default (about 140 s, 80 s and 75 s on one core); the other seeds are marked slow.


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_tqc_zoo_pendulum(seed):
    best = best_eval_reward(TQC, "Pendulum-v1", budget=20_000, threshold=-250, seed=seed, eval_every=2_000, **TQC_ZOO)
    assert best >= -250


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_crossq_zoo_pendulum(seed):
    best = best_eval_reward(CrossQ, "Pendulum-v1", budget=20_000, threshold=-250, seed=seed, eval_every=2_000,
                            **CROSSQ_ZOO)
    assert best >= -250


def test_qrdqn_zoo_cartpole():
    best = best_eval_reward(QRDQN, "CartPole-v1", budget=50_000, threshold=400, seed=0, eval_every=5_000, **QRDQN_ZOO)
    assert best >= 400


@pytest.mark.slow
def test_qrdqn_zoo_cartpole_two_of_three_seeds():
    scores = [best_eval_reward(QRDQN, "CartPole-v1", budget=50_000, threshold=400, seed=seed, eval_every=5_000,
                               **QRDQN_ZOO) for seed in range(3)]
    assert sum(s >= 400 for s in scores) >= 2, scores
