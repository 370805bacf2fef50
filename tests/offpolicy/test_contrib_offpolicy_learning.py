"""TQC, CrossQ and QR-DQN learn: fast checks in the default run, RL Zoo settings and thresholds marked ``slow``.

Hyperparameters are the RL Zoo's (rl-baselines3-zoo hyperparams/{tqc,crossq,qrdqn}.yml) where a test says "Zoo".
"""

from __future__ import annotations

import pytest

from lit_sb3 import QRDQN, TQC, CrossQ
from tests.learning.helpers import best_eval_reward
from tests.offpolicy.test_offpolicy_learning import _eval

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


# ---------------------------------------------------------------------- fast (default run, < ~1 min each)


def test_tqc_fast_pendulum_beats_random():
    model = TQC("MlpPolicy", env="Pendulum-v1", learning_rate=1e-3, policy_kwargs={"net_arch": [64, 64]},
                batch_size=128, seed=0)
    model.learn(4_000)
    assert _eval(model, "Pendulum-v1", seed=0) >= -600  # a random policy scores about -1200


def test_crossq_fast_pendulum_beats_random():
    model = CrossQ("MlpPolicy", env="Pendulum-v1", policy_delay=2, policy_kwargs={"net_arch": [64, 64]},
                   batch_size=128, seed=0)
    model.learn(4_000)
    assert _eval(model, "Pendulum-v1", seed=0) >= -600


def test_qrdqn_fast_cartpole_zoo_settings():
    model = QRDQN("MlpPolicy", env="CartPole-v1", seed=0,
                  **{**QRDQN_ZOO, "policy_kwargs": {"net_arch": [64, 64], "n_quantiles": 10}})
    model.learn(20_000)
    assert _eval(model, "CartPole-v1", seed=0) >= 150  # a random policy scores about 20


# ---------------------------------------------------------------------- Zoo settings and thresholds (slow)


# "reaches X within N steps": evaluated every 2k (5k) steps, 10 deterministic episodes, stopping once X is reached


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_tqc_zoo_pendulum(seed):
    best = best_eval_reward(TQC, "Pendulum-v1", budget=20_000, threshold=-250, seed=seed, eval_every=2_000, **TQC_ZOO)
    assert best >= -250


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_crossq_zoo_pendulum(seed):
    best = best_eval_reward(CrossQ, "Pendulum-v1", budget=20_000, threshold=-250, seed=seed, eval_every=2_000,
                            **CROSSQ_ZOO)
    assert best >= -250


@pytest.mark.slow
def test_qrdqn_zoo_cartpole_two_of_three_seeds():
    scores = [best_eval_reward(QRDQN, "CartPole-v1", budget=50_000, threshold=400, seed=seed, eval_every=5_000,
                               **QRDQN_ZOO) for seed in range(3)]
    assert sum(s >= 400 for s in scores) >= 2, scores
