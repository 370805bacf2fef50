"""A seed of a group follows the run its own process trains: the ordinary lit_sb3 model of that seed.

For PPO, A2C, DQN, QR-DQN, SAC, TQC, TD3 and DDPG, a group of one seed and the same seed inside a group of three take
the ordinary model's actions and end a short run with its parameters, up to the rounding of the batched kernels:

- actions: the group records what it sends to each seed's envs, as the ordinary model does (their action logs).
  Discrete actions are equal throughout (a sample could flip only where two actions' ``probs / Exp(1)`` tie to
  float32 rounding; none does in these runs), and so are the off-policy warm-up's random actions (the seed's own
  action space); the policy's Box actions are its batched forward's, equal to float32 rounding (1e-5 here; measured
  up to 3e-6);
- parameters: within ``max(10 x d, 1e-6)`` of the ordinary model's, where ``d`` is how far the ordinary model ends
  from the same run with ``sb3_parity`` (torch's single-tensor Adam instead of the fused one: a pure rounding
  difference). Measured over these runs (2026-12-05): the group 0 to 1.9e-6 from the ordinary model (DQN's seed ends
  bit-identical: its Adam step is the run's fused kernel on the seed's slices, and its products round alike here),
  ``sb3_parity`` 0 to 1.5e-6 (0 for A2C's RMSprop, whose implementations round alike); a seed that drew other
  streams than its run's ends 1e-2 and more away. Longer runs drift apart as the rounding feeds back through
  training, as ``sb3_parity``'s do (DDPG Pendulum, 1,000 steps: the group 7e-2, ``sb3_parity`` 8e-2 from the ordinary
  model).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from stable_baselines3.common.noise import NormalActionNoise

from lit_sb3 import A2C, DDPG, DQN, PPO, QRDQN, SAC, TD3, TQC, sb3_parity
from lit_sb3.common.envs import to_vec_env
from lit_sb3.seeds import SeedGroup

SEED = 3
OFF_POLICY = {"policy_kwargs": {"net_arch": [32, 32]}, "learning_starts": 50, "batch_size": 16}
#: name -> (class, env id, envs per seed, arguments, env steps per seed)
CONFIGS: dict[str, tuple[type, str, int, dict[str, Any], int]] = {
    "ppo-discrete": (PPO, "CartPole-v1", 4, {"n_steps": 32, "batch_size": 64, "n_epochs": 3}, 1024),
    # target_kl stops updates at various minibatches (the order of an epoch that does not start is not drawn)
    "ppo-target-kl": (PPO, "CartPole-v1", 4, {"n_steps": 32, "batch_size": 32, "n_epochs": 4, "target_kl": 5e-5}, 1024),
    "ppo-box": (PPO, "Pendulum-v1", 4, {"n_steps": 32, "batch_size": 64, "n_epochs": 3}, 1024),
    "a2c-discrete": (A2C, "CartPole-v1", 4, {}, 1000),
    "a2c-box": (A2C, "Pendulum-v1", 4, {}, 1000),
    "dqn": (DQN, "CartPole-v1", 2, {**OFF_POLICY, "target_update_interval": 40, "max_grad_norm": 0.5}, 320),
    "qrdqn": (
        QRDQN,
        "CartPole-v1",
        2,
        # (its default learning rate, 5e-5, moves the weights too little in 320 steps to tell another seed's run)
        {
            **OFF_POLICY,
            "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 7},
            "target_update_interval": 40,
            "learning_rate": 1e-3,
        },
        320,
    ),
    "sac": (SAC, "Pendulum-v1", 2, OFF_POLICY, 320),
    "tqc": (TQC, "Pendulum-v1", 2, {**OFF_POLICY, "policy_kwargs": {"net_arch": [32, 32], "n_quantiles": 5}}, 320),
    "td3": (TD3, "Pendulum-v1", 2, {**OFF_POLICY, "action_noise": "normal"}, 320),
    "ddpg": (DDPG, "Pendulum-v1", 2, {**OFF_POLICY, "action_noise": "normal"}, 320),
}


def _kwargs(kwargs: dict[str, Any], parity: bool = False) -> dict[str, Any]:
    """A fresh copy of the arguments (the action noise is an object with state)."""
    fresh = dict(kwargs)
    if fresh.get("action_noise") == "normal":
        fresh["action_noise"] = NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))
    if parity:
        fresh["policy_kwargs"] = sb3_parity(fresh.get("policy_kwargs"))
    return fresh


def _distance(a: Any, b: Any) -> float:
    """The largest difference between two models' parameters."""
    pairs = zip(a.policy.parameters(), b.policy.parameters(), strict=True)
    return max(float((p.detach() - q.detach()).abs().max()) for p, q in pairs)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_seed_of_a_group_follows_its_own_run(name: str) -> None:
    algo, env_id, n_envs, kwargs, budget = CONFIGS[name]
    runs = []
    for parity in (False, True):
        model = algo("MlpPolicy", env=to_vec_env(env_id, n_envs), seed=SEED, **_kwargs(kwargs, parity))
        runs.append(model.learn(budget))
    ordinary, with_parity = runs
    rounding = _distance(ordinary, with_parity)
    expected = ordinary._action_log.actions
    assert expected is not None and len(expected) == budget // n_envs
    discrete = not ordinary.action_space.shape
    warm_up = kwargs.get("learning_starts", 0) // n_envs  # vector steps of random actions (off-policy)
    for seeds, index in (([SEED], 0), ([1, SEED, 5], 1)):
        group = SeedGroup(algo, seeds=seeds, env=env_id, n_envs=n_envs, **_kwargs(kwargs)).learn(budget)
        actions = group._action_logs[index].actions
        assert actions is not None and actions.shape == expected.shape
        if discrete:
            assert (actions == expected).all()
        else:
            assert (actions[:warm_up] == expected[:warm_up]).all()
            np.testing.assert_allclose(actions, expected, rtol=0, atol=1e-5)
        distance = _distance(ordinary, group.model(index))
        assert distance <= max(10 * rounding, 1e-6), (distance, rounding)
    # the test can tell: the same seed drawing other streams (a neighbour's) ends far from its own run
    neighbour = SeedGroup(algo, seeds=[SEED + 1], env=env_id, n_envs=n_envs, **_kwargs(kwargs))
    other = SeedGroup(algo, seeds=[SEED], env=env_id, n_envs=n_envs, **_kwargs(kwargs))
    other.streams.load_state(0, neighbour.streams.state(0))
    other.learn(budget)
    assert _distance(ordinary, other.model(0)) > 1e-3


def test_the_ordinary_model_draws_first_from_where_its_build_left_the_generators() -> None:
    """What the group's streams stand for: nothing between an ordinary model's build and its first action (lit_sb3's
    ``learn``, Lightning's set-up of the fit, the envs' seeding and reset) draws from the global generators."""
    model = PPO("MlpPolicy", env=to_vec_env("CartPole-v1", 2), seed=SEED, n_steps=4, batch_size=8, n_epochs=1)
    after_build = torch.get_rng_state(), np.random.get_state(legacy=True)
    first_draw: list[tuple[torch.Tensor, Any]] = []
    step = model._policy_step

    def recording(obs: Any) -> Any:
        if not first_draw:
            first_draw.append((torch.get_rng_state(), np.random.get_state(legacy=True)))
        return step(obs)

    model._policy_step = recording  # type: ignore[method-assign]
    model.learn(8)
    torch_state, numpy_state = first_draw[0]
    assert torch.equal(torch_state, after_build[0])
    assert all(np.array_equal(a, b) for a, b in zip(numpy_state, after_build[1]))
