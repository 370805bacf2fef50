"""PPO and A2C losses and gradients equal SB3's with identical weights and an identical rollout."""

from __future__ import annotations

import pytest
import stable_baselines3 as sb3
import torch
from stable_baselines3.common.env_util import make_vec_env

import lit_sb3

pytestmark = pytest.mark.parity

TOL = 1e-6


def _sb3_rollout(algo: str, env_id: str, **kwargs):
    """An SB3 model with one collected rollout, ready for ``train()``."""
    env = make_vec_env(env_id, n_envs=2, seed=3)
    model = getattr(sb3, algo)("MlpPolicy", env, seed=3, device="cpu", **kwargs)
    _, callback = model._setup_learn(total_timesteps=10_000, callback=None)
    callback.on_training_start(locals(), globals())
    assert model.collect_rollouts(env, callback, model.rollout_buffer, model.n_steps)
    return model


def _our_twin(algo: str, sb3_model, **kwargs):
    ours = getattr(lit_sb3, algo)("MlpPolicy", seed=3, device="cpu", **kwargs)
    ours.build(sb3_model.observation_space, sb3_model.action_space)
    ours.policy.load_state_dict(sb3_model.policy.state_dict())
    return ours


def _compare(ours, sb3_model, keys: dict[str, str]) -> None:
    batch = next(sb3_model.rollout_buffer.get(None))  # the whole rollout: SB3 trains on it as one minibatch
    ours.policy.set_training_mode(True)
    loss, terms = ours.compute_loss(batch)
    ours.policy.zero_grad()
    loss.backward()
    sb3_model.train()
    logged = sb3_model.logger.name_to_value
    for our_key, sb3_key in keys.items():
        assert terms[our_key].item() == pytest.approx(logged[sb3_key], abs=TOL, rel=TOL), our_key
    if "train/loss" in logged:  # PPO logs its (last) total loss, A2C does not
        assert loss.item() == pytest.approx(logged["train/loss"], abs=TOL, rel=TOL)
    theirs = dict(sb3_model.policy.named_parameters())
    for name, param in ours.policy.named_parameters():
        assert torch.allclose(param.grad, theirs[name].grad, atol=TOL, rtol=1e-5), name


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("clip_range_vf", [None, 0.1])
def test_ppo_loss_and_gradients_match_sb3(env_id, clip_range_vf):
    kwargs = dict(n_steps=32, batch_size=64, n_epochs=1, ent_coef=0.01, max_grad_norm=1e9, clip_range_vf=clip_range_vf)
    theirs = _sb3_rollout("PPO", env_id, **kwargs)
    ours = _our_twin("PPO", theirs, **kwargs)
    _compare(
        ours,
        theirs,
        {
            "policy_gradient_loss": "train/policy_gradient_loss",
            "value_loss": "train/value_loss",
            "entropy_loss": "train/entropy_loss",
            "clip_fraction": "train/clip_fraction",
            "approx_kl": "train/approx_kl",
        },
    )


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("normalize_advantage", [False, True])
def test_a2c_loss_and_gradients_match_sb3(env_id, normalize_advantage):
    kwargs = dict(n_steps=8, ent_coef=0.01, max_grad_norm=1e9, normalize_advantage=normalize_advantage)
    theirs = _sb3_rollout("A2C", env_id, **kwargs)
    ours = _our_twin("A2C", theirs, **kwargs)
    _compare(
        ours,
        theirs,
        {"policy_loss": "train/policy_loss", "value_loss": "train/value_loss", "entropy_loss": "train/entropy_loss"},
    )


def test_a2c_uses_sb3_rmsprop_settings():
    ours = lit_sb3.A2C("MlpPolicy", env="CartPole-v1", rms_prop_eps=1e-4)
    theirs = sb3.A2C("MlpPolicy", "CartPole-v1", rms_prop_eps=1e-4)
    assert type(ours.policy.optimizer) is type(theirs.policy.optimizer) is torch.optim.RMSprop
    ours_group, their_group = ours.policy.optimizer.param_groups[0], theirs.policy.optimizer.param_groups[0]
    for key in ("lr", "alpha", "eps", "weight_decay"):
        assert ours_group[key] == their_group[key], key
    # the step runs multi-tensor (torch's CPU default loops in Python); the whole-run parity tests hold it bit-identical
    assert ours_group["foreach"] is True and not their_group["foreach"]


@pytest.mark.parametrize("settings", [{}, {"momentum": 0.9, "centered": True, "weight_decay": 1e-3}])
def test_multi_tensor_rmsprop_steps_are_the_single_tensor_steps(settings):
    torch.manual_seed(0)
    params = [[torch.randn(shape, requires_grad=True) for shape in ((64, 4), (64,), (2, 64), (2,))]]
    params.append([p.detach().clone().requires_grad_() for p in params[0]])
    optimizers = [
        torch.optim.RMSprop(group, lr=7e-4, alpha=0.99, eps=1e-5, foreach=foreach, **settings)
        for group, foreach in zip(params, (False, True))
    ]
    for _ in range(50):
        grads = [torch.randn_like(p) for p in params[0]]
        for group, optimizer in zip(params, optimizers):
            for p, g in zip(group, grads):
                p.grad = g.clone()
            optimizer.step()
    assert all(torch.equal(a, b) for a, b in zip(*params))
