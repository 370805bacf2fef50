"""Seed groups on a CUDA device (skipped without one): a group learns, is reproducible, computes what the CPU group
computes, and each seed is an ordinary model on the group's device that saves and loads.

A CUDA group is compared with the CPU group within a tolerance, not bit for bit: the GPU's kernels (cuBLAS's matrix
products, its reductions) sum in another order than the CPU's, so every forward differs in the last bits (about 1e-7
relative). The random draws are the same (each seed's host generators), so the two groups take the same actions in
their first rollout and make the same updates up to that rounding, and then drift apart as training feeds the
differences back. The test compares each parameter tensor's change over a short run, ``|d_cuda - d_cpu| / |d_cpu|``:
float32 rounding gives far less than the tolerance (1e-3 where the optimizer's ``eps`` is 1e-5, PPO's Adam and A2C's
RMSprop; 1e-2 with Adam's default 1e-8 in the off-policy algorithms, where a gradient element that rounding moves
across zero flips its step's sign), while a wrong computation (another seed's draws or minibatch, a missing or doubled
step) changes it by order 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO as SB3PPO
from stable_baselines3.common.noise import NormalActionNoise

from lit_sb3 import A2C, DDPG, DQN, PPO, SAC, TD3
from lit_sb3.seeds import SeedGroup
from lit_sb3.seeds.transfer import to_device, to_host

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

CUDA = torch.device("cuda", 0)
SMALL_OFF = {"policy_kwargs": {"net_arch": [32, 32]}, "learning_starts": 50, "batch_size": 16}


def _noise() -> NormalActionNoise:
    return NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))


def _config(name: str) -> tuple[type, str, dict[str, Any], int]:
    """(class, env id, arguments, env steps per seed of a short run)."""
    configs: dict[str, tuple[type, str, dict[str, Any], int]] = {
        "PPO": (PPO, "CartPole-v1", {"n_steps": 32, "batch_size": 32, "n_epochs": 2}, 128),
        "PPO-box": (PPO, "Pendulum-v1", {"n_steps": 32, "batch_size": 32, "n_epochs": 2}, 128),
        "A2C": (A2C, "CartPole-v1", {}, 60),
        "DQN": (DQN, "CartPole-v1", {**SMALL_OFF, "target_update_interval": 40, "max_grad_norm": 0.5}, 150),
        "SAC": (SAC, "Pendulum-v1", SMALL_OFF, 150),
        "TD3": (TD3, "Pendulum-v1", {**SMALL_OFF, "action_noise": _noise()}, 150),
        "DDPG": (DDPG, "Pendulum-v1", {**SMALL_OFF, "action_noise": _noise()}, 150),
    }
    return configs[name]


NAMES = ["PPO", "PPO-box", "A2C", "DQN", "SAC", "TD3", "DDPG"]


def _group(name: str, device: str, seeds: tuple[int, ...] = (0, 1)) -> SeedGroup:
    cls, env, kwargs, _ = _config(name)
    return SeedGroup(cls, seeds=list(seeds), env=env, n_envs=2, device=device, **kwargs)


def _params(group: SeedGroup) -> dict[str, torch.Tensor]:
    net = group.algorithm.net  # type: ignore[attr-defined]
    return {name: value.detach().cpu().clone() for name, value in net.params.items()}


def _untimed(rows: list[tuple[int, dict[str, float]]]) -> list[tuple[int, dict[str, float]]]:
    return [(step, {k: v for k, v in row.items() if not k.startswith("time/")}) for step, row in rows]


@pytest.mark.parametrize("name", NAMES)
def test_a_cuda_group_trained_twice_is_identical(name: str) -> None:
    steps = _config(name)[3]
    first, second = _group(name, "cuda").learn(steps), _group(name, "cuda").learn(steps)
    assert first.device == CUDA
    for key, value in _params(first).items():
        assert torch.equal(value, _params(second)[key]), key
    for i in range(2):
        assert _untimed(first.metrics(i)) == _untimed(second.metrics(i))


@pytest.mark.parametrize("name", NAMES)
def test_the_cuda_group_computes_what_the_cpu_group_computes(name: str) -> None:
    """Same initial weights (bit for bit), the same first actions, and each parameter's change over a short run equal
    to float32 rounding (see the module docstring for the tolerance)."""
    steps = _config(name)[3]
    cpu, cuda = _group(name, "cpu"), _group(name, "cuda")
    initial = _params(cpu)
    assert all(torch.equal(value, _params(cuda)[key]) for key, value in initial.items())
    cpu.learn(steps)
    cuda.learn(steps)
    algorithm = cpu.algorithm
    on_policy = hasattr(algorithm, "buffer")
    first_steps = algorithm.hp.n_steps if on_policy else algorithm.template.learning_starts // 2  # type: ignore[attr-defined]
    for i in range(2):
        cpu_actions, cuda_actions = cpu._action_logs[i].actions, cuda._action_logs[i].actions
        assert cpu_actions is not None and cuda_actions is not None
        if cpu_actions.dtype.kind == "f":
            np.testing.assert_allclose(cuda_actions[:first_steps], cpu_actions[:first_steps], atol=1e-5, rtol=0)
        else:
            assert np.array_equal(cuda_actions[:first_steps], cpu_actions[:first_steps])
    tolerance = 1e-3 if on_policy else 1e-2
    gaps = {}
    for key, before in initial.items():
        moved_cpu, moved_cuda = _params(cpu)[key] - before, _params(cuda)[key] - before
        scale = float(moved_cpu.norm())
        if scale == 0.0:
            assert float(moved_cuda.norm()) == 0.0, key
            continue
        gaps[key] = float((moved_cuda - moved_cpu).norm()) / scale
    print(f"{name}: largest relative gap of a parameter's change, CUDA vs CPU: {max(gaps.values()):.2e}")
    assert gaps and max(gaps.values()) < tolerance, gaps


def test_a_cuda_group_learns() -> None:
    """PPO on CartPole with the RL Zoo's settings: every seed well above a random policy's ~22 after 25,000 steps."""
    zoo = {"n_steps": 32, "batch_size": 256, "gae_lambda": 0.8, "gamma": 0.98, "n_epochs": 20, "learning_rate": 1e-3}
    group = SeedGroup(PPO, seeds=range(4), env="CartPole-v1", n_envs=8, device="cuda", **zoo)
    group.learn(25_000)
    returns = [np.mean([episode["r"] for episode in buffer]) for buffer in group.ep_info_buffers]
    assert min(returns) > 100, returns


@pytest.mark.parametrize("name", ["PPO", "SAC"])
def test_each_seed_is_an_ordinary_model_on_the_groups_device(name: str, tmp_path: Path) -> None:
    group = _group(name, "cuda").learn(_config(name)[3])
    cls = _config(name)[0]
    model = group.model(1)
    assert type(model) is cls and model.device == CUDA
    stacked = group.algorithm.net.params  # type: ignore[attr-defined]
    for key, value in model.policy.state_dict().items():
        assert value.device == CUDA and torch.equal(value, stacked[key][1]), key
    obs = group.envs[1].reset()
    actions, _ = model.predict(obs, deterministic=True)
    model.save(tmp_path / "seed1.zip")
    on_cpu = cls.load(tmp_path / "seed1.zip", device="cpu")
    for key, value in on_cpu.policy.state_dict().items():
        assert value.device.type == "cpu" and torch.equal(value, stacked[key][1].cpu()), key
    np.testing.assert_allclose(on_cpu.predict(obs, deterministic=True)[0], actions, atol=1e-5)
    on_cuda = cls.load(tmp_path / "seed1.zip", device="cuda")
    assert np.array_equal(on_cuda.predict(obs, deterministic=True)[0], actions)
    if name == "PPO":
        sb3 = SB3PPO.load(tmp_path / "seed1.zip", device="cpu")  # an SB3-style zip: SB3 reads it too
        assert all(torch.equal(a, b.cpu()) for a, b in zip(sb3.policy.parameters(), model.policy.parameters()))


def test_a_cuda_groups_seed_states_are_on_the_host_and_resume_a_cpu_group() -> None:
    cuda = _group("PPO", "cuda").learn(128)
    states = [cuda.seed_state(i) for i in range(2)]
    assert all(t.device.type == "cpu" for t in states[0]["algorithm_state"]["policy"].values())
    cpu = _group("PPO", "cpu")
    cpu.load_seed_states(states)
    for key, value in _params(cuda).items():
        assert torch.equal(value, _params(cpu)[key]), key
    cpu.learn(64, reset_num_timesteps=False)
    assert cpu.num_timesteps == 192


def test_transfers_move_each_dtype_in_one_copy_and_back() -> None:
    arrays = [np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(4).reshape(2, 2), np.ones((2, 1), np.float32)]
    on_device = to_device(arrays, CUDA)
    assert [t.device for t in on_device] == [CUDA] * 3
    back = to_host(on_device)
    for original, returned in zip(arrays, back):
        assert returned.dtype == original.dtype and np.array_equal(returned, original)
