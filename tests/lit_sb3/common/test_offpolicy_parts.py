"""The typed parts the off-policy algorithms own: entropy temperature, epsilon-greedy schedule, target networks."""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch
from gymnasium import spaces

import lit_sb3
from lit_sb3.common.entropy import EntropyTemperature
from lit_sb3.common.epsilon_greedy import EpsilonGreedy
from lit_sb3.common.targets import TargetNetworks

BOX = spaces.Box(-1.0, 1.0, shape=(3,))


def test_learned_temperature_steps_towards_target_entropy():
    temperature = EntropyTemperature("auto_0.5", "auto", learning_rate=0.1)
    assert temperature.build(BOX) == {"target_entropy": -3.0}  # "auto" resolved from the action space
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
    temperature = EntropyTemperature(0.2, -1.5, learning_rate=0.1)
    assert temperature.optimizers() == {} and temperature.log_ent_coef is None
    assert temperature.update(torch.zeros(4, 1)) is None
    assert temperature.value().item() == pytest.approx(0.2)
    temperature.load_sb3_variables({"ent_coef_tensor": torch.tensor(0.7)})
    assert temperature.value().item() == pytest.approx(0.7)
    assert temperature.target_entropy == -1.5


def test_bad_temperature_arguments_fail_with_the_parameter_name():
    with pytest.raises(ValueError, match="ent_coef: must be"):
        EntropyTemperature("auto_-1", "auto", learning_rate=0.1)
    with pytest.raises(ValueError, match="target_entropy: must be 'auto' or a float"):
        EntropyTemperature("auto", "low", learning_rate=0.1)


def test_epsilon_follows_the_linear_schedule_and_draws_once():
    epsilon = EpsilonGreedy(exploration_initial_eps=1.0, exploration_final_eps=0.1, exploration_fraction=0.5)
    assert epsilon.exploration_rate == 0.0  # no exploration before the first env step sets it
    epsilon.on_step(1.0, n_envs=1)
    assert epsilon.exploration_rate == pytest.approx(1.0)
    epsilon.on_step(0.75, n_envs=1)  # a quarter of the budget spent: halfway down the decay
    assert epsilon.exploration_rate == pytest.approx(0.55)
    epsilon.on_step(0.2, n_envs=1)
    assert epsilon.exploration_rate == pytest.approx(0.1)
    np.random.seed(0)
    draw = np.random.rand()
    np.random.seed(0)
    assert epsilon.explores() == (draw < 0.1)
    assert np.random.rand() != draw  # exactly one draw was taken


def test_target_networks_refresh_every_n_env_steps_and_keep_the_count():
    online, target = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    algorithm = types.SimpleNamespace(target_update_interval=6, tau=1.0)
    targets = TargetNetworks((online, target), settings_of=algorithm)
    for _ in range(2):  # 2 vector steps of 3 envs = 6 env steps: the second one refreshes
        assert not torch.equal(target.weight, online.weight)
        targets.on_step(1.0, n_envs=3)
    assert torch.equal(target.weight, online.weight)
    assert targets.state("checkpoint") == {"n_calls": 2} and targets.state("zip") == {}
    # the algorithm's settings are read at every step (as SB3 does): a change after construction applies at once
    algorithm.target_update_interval, algorithm.tau = 3, 0.5
    online.weight.data.add_(1.0)
    expected = 0.5 * target.weight + 0.5 * online.weight
    targets.on_step(1.0, n_envs=3)
    assert torch.allclose(target.weight, expected)
    restored = TargetNetworks((online, target), settings_of=algorithm)
    restored.load_state({"n_calls": 2, "other": 0}, "checkpoint")
    assert restored.n_calls == 2
    assert TargetNetworks((online, target)).state("checkpoint") == {}  # updated by the algorithm: nothing to keep


@pytest.mark.parametrize("algo, networks", [("DQN", "q_net"), ("QRDQN", "quantile_net")])
def test_target_refresh_settings_changed_after_construction_apply(algo, networks):
    model = getattr(lit_sb3, algo)(
        "MlpPolicy", env="CartPole-v1", seed=0, learning_starts=100, target_update_interval=10**9
    )
    online, target = getattr(model.policy, networks), getattr(model.policy, f"{networks}_target")
    with torch.no_grad():
        for parameter in online.parameters():
            parameter.add_(1.0)
    model.target_update_interval, model.tau = 2, 1.0  # SB3 reads both at every step
    model.learn(4)
    assert all(torch.equal(a, b) for a, b in zip(online.parameters(), target.parameters()))


def test_sb3_attribute_names_read_and_write_the_part():
    class Algorithm:
        exploration_rate, exploration_schedule, exploration_initial_eps, exploration_final_eps, exploration_fraction = (
            EpsilonGreedy.sb3_attributes("exploration")
        )

        def __init__(self) -> None:
            self.exploration = EpsilonGreedy(1.0, 0.1, 0.5)

    algorithm = Algorithm()
    algorithm.exploration_rate = 0.25
    assert algorithm.exploration.exploration_rate == 0.25 and algorithm.exploration_fraction == 0.5
    with pytest.raises((TypeError, RuntimeError)) as error:  # Python < 3.12 wraps it in a RuntimeError
        type("Bad", (), {"epsilon": EpsilonGreedy.sb3_attributes("exploration")[0]})
    assert "has no such attribute" in str(error.value.__cause__ or error.value)
