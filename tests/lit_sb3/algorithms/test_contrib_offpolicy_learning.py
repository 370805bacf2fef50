"""TQC, CrossQ and QR-DQN reach the RL Zoo thresholds with the Zoo settings (one seed by default, more ``slow``).

Hyperparameters and budgets are the RL Zoo's (hyperparams/{tqc,crossq,qrdqn}.yml) as conf/algo_env/ ports them.
"""

from __future__ import annotations

import pytest

from lit_sb3 import QRDQN, TQC, CrossQ
from tests.lit_sb3.helpers import best_eval_reward, zoo_settings

pytestmark = pytest.mark.learning

TQC_ZOO = zoo_settings("tqc", "Pendulum")  # 20k steps
CROSSQ_ZOO = zoo_settings("crossq", "Pendulum")  # 20k steps, [256, 256] (its default [1024, 1024] is ~6x slower)
QRDQN_ZOO = zoo_settings("qrdqn", "CartPole")  # 50k steps


# "reaches X within N steps": evaluated every 2k (5k) steps, 10 deterministic episodes, stopping once X is reached.
# Seed 0 of each runs by default (about 140 s, 80 s and 75 s on one core); the other seeds are marked slow.


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_tqc_zoo_pendulum(seed):
    best = best_eval_reward(
        TQC,
        "Pendulum-v1",
        budget=TQC_ZOO.budget,
        threshold=-250,
        seed=seed,
        eval_every=2_000,
        **TQC_ZOO.hyperparameters,
    )
    assert best >= -250


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_crossq_zoo_pendulum(seed):
    best = best_eval_reward(
        CrossQ,
        "Pendulum-v1",
        budget=CROSSQ_ZOO.budget,
        threshold=-250,
        seed=seed,
        eval_every=2_000,
        **CROSSQ_ZOO.hyperparameters,
    )
    assert best >= -250


def test_qrdqn_zoo_cartpole():
    best = best_eval_reward(
        QRDQN,
        "CartPole-v1",
        budget=QRDQN_ZOO.budget,
        threshold=400,
        seed=0,
        eval_every=5_000,
        **QRDQN_ZOO.hyperparameters,
    )
    assert best >= 400


@pytest.mark.slow
def test_qrdqn_zoo_cartpole_two_of_three_seeds():
    scores = [
        best_eval_reward(
            QRDQN,
            "CartPole-v1",
            budget=QRDQN_ZOO.budget,
            threshold=400,
            seed=seed,
            eval_every=5_000,
            **QRDQN_ZOO.hyperparameters,
        )
        for seed in range(3)
    ]
    assert sum(s >= 400 for s in scores) >= 2, scores
