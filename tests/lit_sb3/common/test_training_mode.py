"""The policy's train/eval switch as flag writes sets exactly the flags of the policy's own ``set_training_mode``."""

from __future__ import annotations

import itertools
import random

import pytest
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

import lit_sb3
from lit_sb3.common.training_mode import TrainingModeSwitch

ALGORITHMS = [
    ("A2C", "CartPole-v1", {}),
    ("PPO", "Pendulum-v1", {}),
    ("SAC", "Pendulum-v1", {}),
    ("TD3", "Pendulum-v1", {}),
    ("DDPG", "Pendulum-v1", {}),
    ("DQN", "CartPole-v1", {}),
    ("QRDQN", "CartPole-v1", {}),
    ("TQC", "Pendulum-v1", {}),
    ("CrossQ", "Pendulum-v1", {}),
    ("TRPO", "CartPole-v1", {}),
    ("RecurrentPPO", "CartPole-v1", {"policy": "MlpLstmPolicy"}),
    ("MaskablePPO", InvalidActionEnvDiscrete(dim=10, n_invalid_actions=3), {}),
]


def _flags(policy: nn.Module) -> list[bool]:
    return [module.training for module in policy.modules()]


def _scramble(policy: nn.Module, seed: int) -> None:
    rng = random.Random(seed)
    for module in policy.modules():
        object.__setattr__(module, "training", rng.random() < 0.5)


@pytest.mark.parametrize("algo, env_id, kwargs", ALGORITHMS, ids=[a for a, _, _ in ALGORITHMS])
def test_the_switch_sets_the_flags_the_policy_sets(algo, env_id, kwargs):
    kwargs = {"policy": "MlpPolicy", **kwargs}
    policy = getattr(lit_sb3, algo)(env=env_id, seed=0, **kwargs).policy
    switch = TrainingModeSwitch(policy)
    assert switch._set_by is not None, "SB3's own policies take the flag-writing path"
    for seed, mode in itertools.product(range(3), (False, True)):
        _scramble(policy, seed)
        policy.set_training_mode(mode)
        expected = _flags(policy)
        _scramble(policy, seed)
        switch(mode)
        assert _flags(policy) == expected, (seed, mode)
    if hasattr(policy, "critic_target") or hasattr(policy, "q_net_target"):
        # the target networks keep their own mode, as with SB3's switch
        target = getattr(policy, "critic_target", None) or policy.q_net_target
        target.train(False)
        switch(True)
        assert not target.training


def test_building_the_switch_leaves_every_flag_as_it_was():
    policy = lit_sb3.SAC("MlpPolicy", env="Pendulum-v1", seed=0).policy
    _scramble(policy, 7)
    before = _flags(policy)
    TrainingModeSwitch(policy)
    assert _flags(policy) == before


class _CountingDropout(nn.Dropout):
    calls = 0

    def train(self, mode: bool = True) -> _CountingDropout:
        type(self).calls += 1
        return super().train(mode)


class _PolicyWithItsOwnSwitch(ActorCriticPolicy):
    def set_training_mode(self, mode: bool) -> None:
        super().set_training_mode(mode)
        self.switched_to = mode


@pytest.mark.parametrize("case", ["module overrides train", "policy overrides set_training_mode"])
def test_what_may_do_more_than_set_flags_keeps_the_real_call(case):
    if case == "module overrides train":
        policy = lit_sb3.A2C("MlpPolicy", env="CartPole-v1", seed=0).policy
        policy.mlp_extractor.policy_net.append(_CountingDropout(0.1))
    else:
        policy = lit_sb3.A2C(_PolicyWithItsOwnSwitch, env="CartPole-v1", seed=0).policy
    switch = TrainingModeSwitch(policy)
    assert switch._set_by is None
    before = _CountingDropout.calls
    switch(False)
    if case == "module overrides train":
        assert _CountingDropout.calls == before + 1 and not policy.mlp_extractor.policy_net[-1].training
    else:
        assert policy.switched_to is False


def test_training_collects_in_eval_mode_and_updates_in_train_mode():
    model = lit_sb3.SAC("MlpPolicy", env="Pendulum-v1", seed=0, learning_starts=10)
    policy, modes = model.policy, {"collect": set(), "update": set()}
    update = model.gradient_updates

    def recording(steps: int, batch_size: int) -> None:
        modes["update"].add((policy.training, policy.actor.training, policy.critic.training))
        update(steps, batch_size)

    class Collecting(BaseCallback):
        def _on_step(self) -> bool:
            modes["collect"].add((policy.training, policy.actor.training, policy.critic.training))
            return True

    model.gradient_updates = recording
    model.learn(30, callback=Collecting())
    assert modes == {"collect": {(False, False, False)}, "update": {(True, True, True)}}
