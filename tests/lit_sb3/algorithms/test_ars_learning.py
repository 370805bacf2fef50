"""ARS reaches CartPole's reward threshold within the RL Zoo's budget and hyperparameters."""

from __future__ import annotations

import pytest

from lit_sb3 import ARS
from tests.lit_sb3.helpers import best_eval_reward, zoo_settings

pytestmark = pytest.mark.learning

# the RL Zoo's ars.yml CartPole-v1 entry as conf/algo_env/ ports it (budget 5e4); the policy: conf/algo/ars.yaml's
ARS_ZOO = zoo_settings("ars", "CartPole")


def _best(seed: int) -> float:
    return best_eval_reward(
        ARS,
        "CartPole-v1",
        budget=ARS_ZOO.budget,
        threshold=475,
        seed=seed,
        eval_every=2_000,
        policy="LinearPolicy",
        **ARS_ZOO.hyperparameters,
    )


@pytest.mark.parametrize("seed", [0, 2])
def test_ars_solves_cartpole_within_50k(seed):
    """Default run: a few seconds per seed (early stop at the threshold)."""
    assert _best(seed) >= 475


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 3, 4])
def test_ars_solves_cartpole_within_50k_more_seeds(seed):
    assert _best(seed) >= 475
