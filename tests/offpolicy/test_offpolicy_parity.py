"""Same weights, same replay batch, same RNG: our updates equal SB3's (losses, gradients, new weights) within 1e-6."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import stable_baselines3 as sb3
import torch
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.type_aliases import ReplayBufferSamples

import lit_sb3

pytestmark = pytest.mark.parity

TOL = 1e-6


def _fixed_batch(model, batch_size: int = 64, seed: int = 0) -> ReplayBufferSamples:
    """A replay batch in the buffer's format (Box actions scaled to [-1, 1], some terminals)."""
    rng = np.random.default_rng(seed)
    obs_space, act_space = model.observation_space, model.action_space
    obs = np.stack([obs_space.sample() for _ in range(batch_size)]).astype(np.float32)
    next_obs = np.stack([obs_space.sample() for _ in range(batch_size)]).astype(np.float32)
    if isinstance(act_space, sb3.common.policies.spaces.Box):
        actions = rng.uniform(-1, 1, size=(batch_size, *act_space.shape)).astype(np.float32)
    else:
        actions = rng.integers(0, act_space.n, size=(batch_size, 1)).astype(np.float32)
    rewards = rng.normal(size=(batch_size, 1)).astype(np.float32)
    dones = (rng.random((batch_size, 1)) < 0.2).astype(np.float32)
    t = torch.as_tensor
    return ReplayBufferSamples(t(obs), t(actions), t(next_obs), t(dones), t(rewards))


def _record_step_grads(optimizers: dict[str, torch.optim.Optimizer]) -> dict[str, list[list[torch.Tensor]]]:
    """Wrap each optimizer's ``step`` to keep a copy of the gradients it applies."""
    seen: dict[str, list[list[torch.Tensor]]] = {name: [] for name in optimizers}
    for name, opt in optimizers.items():
        original = opt.step

        def step(*args, _name=name, _opt=opt, _orig=original, **kwargs):
            params = [p for g in _opt.param_groups for p in g["params"]]
            seen[_name].append([p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in params])
            return _orig(*args, **kwargs)

        opt.step = step
    return seen


def _pair(name: str, env_id: str, reference: Any = sb3, **kwargs):
    """The reference package's model (SB3 or sb3-contrib) and ours, same weights, both sampling one fixed batch."""
    ref = getattr(reference, name)("MlpPolicy", env_id, seed=0, device="cpu", **kwargs)
    ours = getattr(lit_sb3, name)("MlpPolicy", env=env_id, seed=0, device="cpu", **kwargs)
    ours.policy.load_state_dict(ref.policy.state_dict())
    ref.set_logger(Logger(folder=None, output_formats=[]))
    batch = _fixed_batch(ref)
    ref.replay_buffer.sample = lambda *a, **k: batch
    ours.replay_buffer = SimpleNamespace(sample=lambda *a, **k: batch)
    return ref, ours


def _run_both(ref, ours, ref_opts, our_opts, gradient_steps: int):
    ref_grads = _record_step_grads(ref_opts)
    our_grads = _record_step_grads(our_opts)
    torch.manual_seed(123)
    ref.train(gradient_steps=gradient_steps, batch_size=64)
    torch.manual_seed(123)
    ours.policy.set_training_mode(True)
    ours.gradient_updates(gradient_steps, 64)
    return ref_grads, our_grads


def _assert_same(ref_grads, our_grads, ref, ours):
    for name in ref_grads:
        assert len(ref_grads[name]) == len(our_grads[name]) > 0, name
        for ref_step, our_step in zip(ref_grads[name], our_grads[name]):
            for g_ref, g_ours in zip(ref_step, our_step):
                torch.testing.assert_close(g_ours, g_ref, atol=TOL, rtol=0)
    ref_state, our_state = ref.policy.state_dict(), ours.policy.state_dict()
    for key, value in ref_state.items():
        torch.testing.assert_close(our_state[key], value, atol=TOL, rtol=0, msg=key)


def _our_mean(ours, key: str) -> float:
    return (ours._metrics.sums[key] / ours._metrics.counts[key]).item()


def test_sac_update_matches_sb3():
    ref, ours = _pair("SAC", "Pendulum-v1", policy_kwargs={"net_arch": [32, 32]})
    ours.log_ent_coef.data.copy_(ref.log_ent_coef.data)
    ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer, "ent": ref.ent_coef_optimizer}
    our_opts = {"actor": ours.policy.actor.optimizer, "critic": ours.policy.critic.optimizer,
                "ent": ours.ent_coef_optimizer}
    ref_grads, our_grads = _run_both(ref, ours, ref_opts, our_opts, gradient_steps=2)
    _assert_same(ref_grads, our_grads, ref, ours)
    torch.testing.assert_close(ours.log_ent_coef.data, ref.log_ent_coef.data, atol=TOL, rtol=0)
    logged = ref.logger.name_to_value
    # SB3 logs the mean over the gradient steps of the last train() call, as our running means do here
    for key in ("actor_loss", "critic_loss", "ent_coef", "ent_coef_loss"):
        assert _our_mean(ours, key) == pytest.approx(logged[f"train/{key}"], abs=TOL), key


def test_sac_fixed_ent_coef_matches_sb3():
    ref, ours = _pair("SAC", "Pendulum-v1", ent_coef=0.1, policy_kwargs={"net_arch": [16]})
    ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer}
    our_opts = {"actor": ours.policy.actor.optimizer, "critic": ours.policy.critic.optimizer}
    ref_grads, our_grads = _run_both(ref, ours, ref_opts, our_opts, gradient_steps=1)
    _assert_same(ref_grads, our_grads, ref, ours)


@pytest.mark.parametrize("name", ["TD3", "DDPG"])
def test_td3_and_ddpg_updates_match_sb3(name):
    ref, ours = _pair(name, "Pendulum-v1", policy_kwargs={"net_arch": [32, 32]})
    ref_opts = {"actor": ref.actor.optimizer, "critic": ref.critic.optimizer}
    our_opts = {"actor": ours.policy.actor.optimizer, "critic": ours.policy.critic.optimizer}
    # two steps: with TD3's policy_delay=2 the second one also updates the actor and the targets
    ref_grads, our_grads = _run_both(ref, ours, ref_opts, our_opts, gradient_steps=2)
    _assert_same(ref_grads, our_grads, ref, ours)
    assert ours._n_updates == ref._n_updates == 2
    logged = ref.logger.name_to_value
    # SB3 logs the last train() call's means; ours accumulate over the same two steps here
    assert _our_mean(ours, "critic_loss") == pytest.approx(logged["train/critic_loss"], abs=TOL)
    assert _our_mean(ours, "actor_loss") == pytest.approx(logged["train/actor_loss"], abs=TOL)


def test_dqn_update_matches_sb3():
    ref, ours = _pair("DQN", "CartPole-v1", policy_kwargs={"net_arch": [32, 32]}, max_grad_norm=0.05)
    ref_opts = {"q": ref.policy.optimizer}
    our_opts = {"q": ours.policy.optimizer}
    ref_grads, our_grads = _run_both(ref, ours, ref_opts, our_opts, gradient_steps=3)
    _assert_same(ref_grads, our_grads, ref, ours)  # max_grad_norm=0.05 makes the clipping bite
    assert _our_mean(ours, "loss") == pytest.approx(ref.logger.name_to_value["train/loss"], abs=TOL)
    assert ours._n_updates == ref._n_updates == 3


def test_dqn_target_update_and_epsilon_follow_env_steps_like_sb3():
    ours = lit_sb3.DQN("MlpPolicy", env="CartPole-v1", target_update_interval=10, tau=1.0, learning_starts=1000,
                       exploration_fraction=0.5, train_freq=1, seed=0, device="cpu")
    with torch.no_grad():
        ours.policy.q_net_target.q_net[0].weight.add_(1.0)  # make online and target nets differ
    ours.learn(9)
    online, target = ours.policy.q_net.state_dict(), ours.policy.q_net_target.state_dict()
    assert not torch.equal(online["q_net.0.weight"], target["q_net.0.weight"])
    ours.learn(1, reset_num_timesteps=False)  # the 10th env step refreshes the target
    online, target = ours.policy.q_net.state_dict(), ours.policy.q_net_target.state_dict()
    assert all(torch.equal(online[k], target[k]) for k in online)
    # epsilon: linear from 1.0 over half of the budget of the last learn() call (10 steps) -> final value
    assert ours.exploration_rate == pytest.approx(0.05)
