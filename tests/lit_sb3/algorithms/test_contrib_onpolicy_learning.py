"""MaskablePPO, TRPO and RecurrentPPO reach their reward thresholds (RL Zoo / sb3-contrib settings)."""

from __future__ import annotations

import pytest
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback

from lit_bench.wrappers import KeepObservationEntries
from lit_sb3 import PPO, TRPO, MaskablePPO, RecurrentPPO
from tests.lit_sb3.helpers import best_eval_reward, zoo_settings

pytestmark = pytest.mark.learning

# the RL Zoo's entries as conf/algo_env/ ports them: trpo.yml CartPole-v1 (budget 1e5) and ppo_lstm.yml
# CartPoleNoVel-v1 (normalize, budget 1e5); PPO gets the latter without the LSTM network (the Zoo's PPO CartPole-v1
# settings are identical apart from the network).
TRPO_ZOO = zoo_settings("trpo", "CartPole")
LSTM_ZOO = zoo_settings("ppo_lstm", "CartPoleNoVel")


class NeverMasked(InvalidActionEnvDiscrete):
    """sb3-contrib's masked identity env that fails the run on the first masked action it receives."""

    def __init__(self) -> None:
        super().__init__(dim=20, n_invalid_actions=10)

    def step(self, action):
        assert self.action_masks()[int(action)], f"masked action {action} was taken"
        return super().step(action)


def test_maskable_ppo_reaches_sb3_contrib_threshold_and_never_takes_a_masked_action():
    """sb3-contrib's tests accept a masked identity env as solved at a mean return of 99 (of 100)."""
    best = best_eval_reward(
        MaskablePPO,
        NeverMasked,
        budget=20_000,
        threshold=99,
        seed=0,
        eval_every=1_000,
        evaluator_class=MaskableEvalCallback,
        n_steps=256,
        gamma=0.4,
    )
    assert best >= 99


def test_trpo_solves_cartpole_within_100k():
    best = best_eval_reward(
        TRPO, "CartPole-v1", budget=TRPO_ZOO.budget, threshold=475, seed=0, **TRPO_ZOO.hyperparameters
    )
    assert best >= 475


def _novel_cartpole_best(algo: type, budget: int, seed: int, **overrides) -> float:
    settings = {**LSTM_ZOO.hyperparameters, "wrapper_class": KeepObservationEntries, **overrides}
    if algo is RecurrentPPO:
        settings["policy"] = "MlpLstmPolicy"
    else:
        del settings["policy_kwargs"]  # the LSTM's network settings
    return best_eval_reward(algo, "CartPole-v1", budget=budget, threshold=475, seed=seed, eval_every=2_500, **settings)


def test_recurrent_ppo_beats_memoryless_ppo_on_cartpole_without_velocities():
    """Cart position and pole angle only: an LSTM can infer the velocities, a feed-forward policy cannot.

    Fast variant (10 epochs per rollout instead of the Zoo's 20, 25k steps): a memoryless PPO stays near 40-50.
    """
    memoryless = _novel_cartpole_best(PPO, 25_000, seed=0, n_epochs=10)
    recurrent = _novel_cartpole_best(RecurrentPPO, 25_000, seed=0, n_epochs=10)
    assert recurrent >= 300 and recurrent >= 3 * memoryless, (recurrent, memoryless)


@pytest.mark.slow
def test_recurrent_ppo_solves_cartpole_without_velocities_with_zoo_settings():
    assert _novel_cartpole_best(RecurrentPPO, LSTM_ZOO.budget, seed=1) >= 475
