"""MaskablePPO, RecurrentPPO and TRPO updates equal sb3-contrib's with identical weights and an identical rollout."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sb3_contrib
import stable_baselines3 as sb3
import torch
from sb3_contrib.common.envs import InvalidActionEnvDiscrete, InvalidActionEnvMultiDiscrete
from stable_baselines3.common.env_util import make_vec_env

import lit_sb3

pytestmark = pytest.mark.parity

TOL = 1e-6
PPO_TERMS = {
    "policy_gradient_loss": "train/policy_gradient_loss",
    "value_loss": "train/value_loss",
    "entropy_loss": "train/entropy_loss",
    "clip_fraction": "train/clip_fraction",
    "approx_kl": "train/approx_kl",
}


def _contrib_rollout(algo: str, env: Any, policy: str, **kwargs: Any):
    """An sb3-contrib model with one collected rollout, ready for ``train()``."""
    vec_env = make_vec_env(env, n_envs=2, seed=3)
    model = getattr(sb3_contrib, algo)(policy, vec_env, seed=3, device="cpu", **kwargs)
    _, callback = model._setup_learn(total_timesteps=10_000, callback=None)
    callback.on_training_start(locals(), globals())
    assert model.collect_rollouts(vec_env, callback, model.rollout_buffer, model.n_steps)
    return model


def _our_twin(algo: str, theirs: Any, policy: str, **kwargs: Any):
    ours = getattr(lit_sb3, algo)(policy, seed=3, device="cpu", **kwargs)
    ours.build(theirs.observation_space, theirs.action_space)
    ours.policy.load_state_dict(theirs.policy.state_dict())
    ours.rollout_buffer = theirs.rollout_buffer
    return ours


def _whole_rollout(model: Any) -> Any:
    np.random.seed(11)  # the recurrent buffer cuts its sequences at a random index: the same one for both
    return next(model.rollout_buffer.get(None))


def _assert_grads_equal(ours: Any, theirs: Any) -> None:
    their_params = dict(theirs.policy.named_parameters())
    for name, param in ours.policy.named_parameters():
        their_grad = their_params[name].grad
        if their_grad is None:
            assert param.grad is None or not param.grad.any(), name
            continue
        assert torch.allclose(param.grad, their_grad, atol=TOL, rtol=1e-5), name


def _compare_ppo_update(ours: Any, theirs: Any) -> None:
    batch = _whole_rollout(theirs)
    ours.policy.set_training_mode(True)
    loss, terms = ours.compute_loss(batch)
    ours.policy.zero_grad()
    loss.backward()
    np.random.seed(11)
    theirs.train()
    logged = theirs.logger.name_to_value
    for our_key, their_key in PPO_TERMS.items():
        assert terms[our_key].item() == pytest.approx(logged[their_key], abs=TOL, rel=TOL), our_key
    assert loss.item() == pytest.approx(logged["train/loss"], abs=TOL, rel=TOL)
    _assert_grads_equal(ours, theirs)


@pytest.mark.parametrize(
    "env",
    [
        lambda: InvalidActionEnvDiscrete(dim=8, n_invalid_actions=4),
        lambda: InvalidActionEnvMultiDiscrete(dims=[3, 4], n_invalid_actions=2),
    ],
    ids=["discrete", "multidiscrete"],
)
@pytest.mark.parametrize("clip_range_vf", [None, 0.1])
def test_maskable_ppo_loss_and_gradients_match_sb3_contrib(env, clip_range_vf):
    kwargs = dict(n_steps=32, batch_size=64, n_epochs=1, ent_coef=0.01, max_grad_norm=1e9, clip_range_vf=clip_range_vf)
    theirs = _contrib_rollout("MaskablePPO", env, "MlpPolicy", **kwargs)
    assert not theirs.rollout_buffer.action_masks.all()  # the rollout does hold masked actions
    ours = _our_twin("MaskablePPO", theirs, "MlpPolicy", **kwargs)
    _compare_ppo_update(ours, theirs)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("policy_kwargs", [{}, {"shared_lstm": True, "enable_critic_lstm": False}], ids=["two", "one"])
def test_recurrent_ppo_loss_and_gradients_match_sb3_contrib(env_id, policy_kwargs):
    kwargs = dict(
        n_steps=64,
        batch_size=128,
        n_epochs=1,
        ent_coef=0.01,
        max_grad_norm=1e9,
        policy_kwargs=dict(lstm_hidden_size=16, **policy_kwargs),
    )
    theirs = _contrib_rollout("RecurrentPPO", env_id, "MlpLstmPolicy", **kwargs)
    if env_id == "CartPole-v1":  # episodes end inside the rollout: sequences are cut there (and padded)
        assert theirs.rollout_buffer.episode_starts[1:].any()
    ours = _our_twin("RecurrentPPO", theirs, "MlpLstmPolicy", **kwargs)
    _compare_ppo_update(ours, theirs)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("sub_sampling_factor", [1, 2])
def test_trpo_update_matches_sb3_contrib(env_id, sub_sampling_factor):
    """The whole TRPO update: surrogate, KL, line search, critic regression, and the parameters it leaves."""
    kwargs = dict(
        n_steps=64,
        batch_size=32,
        n_critic_updates=3,
        cg_damping=0.05,
        target_kl=0.02,
        sub_sampling_factor=sub_sampling_factor,
    )
    theirs = _contrib_rollout("TRPO", env_id, "MlpPolicy", **kwargs)
    ours = _our_twin("TRPO", theirs, "MlpPolicy", **kwargs)
    batch = _whole_rollout(theirs)
    ours.policy.set_training_mode(True)
    torch.manual_seed(5)  # both start the conjugate gradient from the same 1e-4 noise
    ours.training_step(batch, 0)
    np.random.seed(11)
    torch.manual_seed(5)
    theirs.train()
    logged = theirs.logger.name_to_value
    tracked = ours._metrics.means()
    for key in ("policy_objective", "kl_divergence_loss", "is_line_search_success", "value_loss"):
        assert tracked[key] == pytest.approx(logged[f"train/{key}"], abs=TOL, rel=1e-5), key
    their_params = dict(theirs.policy.named_parameters())
    for name, param in ours.policy.named_parameters():
        assert torch.allclose(param, their_params[name], atol=TOL, rtol=1e-5), name


@pytest.mark.parametrize(
    "algo, env, policy",
    [
        ("PPO", "CartPole-v1", "MlpPolicy"),
        ("TRPO", "CartPole-v1", "MlpPolicy"),
        ("MaskablePPO", lambda: InvalidActionEnvDiscrete(dim=4, n_invalid_actions=1), "MlpPolicy"),
        ("RecurrentPPO", "CartPole-v1", "MlpLstmPolicy"),
    ],
)
def test_optimizer_settings_match_the_reference(algo, env, policy):
    """Adam's eps=1e-5 of SB3's actor-critic policies survives our fused-Adam default (it once did not)."""
    reference = getattr(sb3_contrib, algo, None) or getattr(sb3, algo)
    theirs = reference(policy, env() if callable(env) else env, device="cpu")
    ours = getattr(lit_sb3, algo)(policy, env=env() if callable(env) else env, device="cpu")
    ours_group, their_group = ours.policy.optimizer.param_groups[0], theirs.policy.optimizer.param_groups[0]
    assert type(ours.policy.optimizer) is type(theirs.policy.optimizer)
    for key in ("lr", "betas", "eps", "weight_decay", "amsgrad"):
        assert ours_group[key] == their_group[key], key
