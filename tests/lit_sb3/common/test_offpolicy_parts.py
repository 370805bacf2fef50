"""The typed parts the off-policy algorithms own: the entropy temperature and the epsilon-greedy schedule."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from lit_sb3.common.entropy import EntropyTemperature
from lit_sb3.common.q_learning import EpsilonGreedy

BOX = spaces.Box(-1.0, 1.0, shape=(3,))


def test_learned_temperature_steps_towards_target_entropy():
    temperature = EntropyTemperature("auto_0.5", "auto", BOX, learning_rate=0.1)
    assert temperature.target_entropy == -3.0
    before = temperature.value()
    assert before.item() == pytest.approx(0.5)
    # entropy (-log_prob = 1) above the target (-3): the temperature must fall
    loss = temperature.update(torch.full((8, 1), -1.0))
    assert loss is not None
    assert temperature.value().item() < before.item()
    assert before.item() == pytest.approx(0.5)  # the value read before the step is not changed by it
    assert set(temperature.sb3_variables()) == {"log_ent_coef"}


def test_fixed_temperature_never_steps_and_round_trips_sb3_variables():
    temperature = EntropyTemperature(0.2, -1.5, BOX, learning_rate=0.1)
    assert temperature.optimizer is None and temperature.log_ent_coef is None
    assert temperature.update(torch.zeros(4, 1)) is None
    assert temperature.value().item() == pytest.approx(0.2)
    temperature.load_sb3_variables({"ent_coef_tensor": torch.tensor(0.7)})
    assert temperature.value().item() == pytest.approx(0.7)
    assert temperature.target_entropy == -1.5


def test_bad_temperature_arguments_fail_with_the_parameter_name():
    with pytest.raises(ValueError, match="ent_coef: must be"):
        EntropyTemperature("auto_-1", "auto", BOX, learning_rate=0.1)
    with pytest.raises(ValueError, match="target_entropy: must be 'auto' or a float"):
        EntropyTemperature("auto", "low", BOX, learning_rate=0.1)


def test_epsilon_follows_the_linear_schedule_and_draws_once():
    epsilon = EpsilonGreedy(initial_eps=1.0, final_eps=0.1, fraction=0.5)
    assert epsilon.rate == 0.0  # no exploration before the first env step sets it
    epsilon.update(1.0)
    assert epsilon.rate == pytest.approx(1.0)
    epsilon.update(0.75)  # a quarter of the budget spent: halfway down the decay
    assert epsilon.rate == pytest.approx(0.55)
    epsilon.update(0.2)
    assert epsilon.rate == pytest.approx(0.1)
    np.random.seed(0)
    draw = np.random.rand()
    np.random.seed(0)
    assert epsilon.explores() == (draw < 0.1)
    assert np.random.rand() != draw  # exactly one draw was taken
