"""Loss functions and return computation on hand-computed values."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer

from lit_sb3.algorithms.a2c.a2c import a2c_loss
from lit_sb3.algorithms.ppo.ppo import ppo_loss
from lit_sb3.common import losses

t = torch.tensor


def test_normalize_advantages_uses_sample_std():
    out = losses.normalize_advantages(t([1.0, 2.0, 3.0]))
    # mean 2, sample std 1
    assert torch.allclose(out, t([-1.0, 0.0, 1.0]), atol=1e-6)
    assert torch.equal(losses.normalize_advantages(t([5.0])), t([5.0]))


def test_clipped_surrogate_loss_by_hand():
    adv = t([1.0, -1.0, 2.0])
    old = t([0.0, 0.0, 0.0])
    new = torch.log(t([1.5, 0.5, 1.1]))  # ratios 1.5, 0.5, 1.1 ; clip 0.2 -> 1.2, 0.8, 1.1
    loss, clip_fraction = losses.clipped_surrogate_loss(adv, new, old, 0.2)
    # min(r*A, clip(r)*A): 1.2, -0.8, 2.2  -> mean 0.8667 -> loss -0.8667
    assert loss.item() == pytest.approx(-(1.2 - 0.8 + 2.2) / 3, abs=1e-6)
    assert clip_fraction.item() == pytest.approx(2 / 3)


def test_value_loss_with_and_without_clipping():
    values, returns, old = t([1.0, 3.0]), t([2.0, 2.0]), t([0.0, 2.5])
    assert losses.value_loss(values, returns).item() == pytest.approx((1 + 1) / 2)
    # clip 0.5 around old: 0.5, 3.0 -> errors 1.5, 1.0
    assert losses.value_loss(values, returns, old, 0.5).item() == pytest.approx((1.5**2 + 1.0) / 2)


def test_entropy_loss_and_kl():
    assert losses.entropy_loss(t([0.5, 1.5]), t([0.0])).item() == pytest.approx(-1.0)
    assert losses.entropy_loss(None, t([-1.0, -3.0])).item() == pytest.approx(-2.0)
    log_new, log_old = torch.log(t([2.0])), t([0.0])
    assert losses.approx_kl(log_new, log_old).item() == pytest.approx((2 - 1) - math.log(2))
    assert losses.policy_gradient_loss(t([1.0, -2.0]), t([-1.0, -0.5])).item() == pytest.approx(-(-1.0 + 1.0) / 2)


def _batch(**kw):
    return SimpleNamespace(**{k: t(v) for k, v in kw.items()})


def test_ppo_total_loss_combines_terms():
    batch = _batch(advantages=[1.0, -1.0], old_log_prob=[0.0, 0.0], returns=[1.0, 0.0], old_values=[0.0, 0.0])
    log_prob = t([0.0, 0.0])
    loss, terms = ppo_loss(
        t([0.0, 0.0]), log_prob, t([1.0, 1.0]), batch,
        clip_range=0.2, clip_range_vf=None, normalize_advantage=False, ent_coef=0.1, vf_coef=0.5,
    )
    # pg: -(1 - 1)/2 = 0 ; value: (1 + 0)/2 = 0.5 ; entropy loss -1
    assert terms["policy_gradient_loss"].item() == pytest.approx(0.0)
    assert terms["value_loss"].item() == pytest.approx(0.5)
    assert loss.item() == pytest.approx(0.0 + 0.1 * -1.0 + 0.5 * 0.5)
    assert terms["approx_kl"].item() == pytest.approx(0.0)


def test_a2c_total_loss_combines_terms():
    batch = _batch(advantages=[2.0, 0.0], returns=[1.0, 1.0])
    loss, terms = a2c_loss(
        t([0.0, 2.0]), t([-1.0, -2.0]), None, batch, normalize_advantage=False, ent_coef=0.5, vf_coef=0.25
    )
    assert terms["policy_loss"].item() == pytest.approx(1.0)  # -(2 * -1 + 0)/2
    assert terms["entropy_loss"].item() == pytest.approx(-1.5)  # mean log prob
    assert loss.item() == pytest.approx(1.0 + 0.5 * -1.5 + 0.25 * 1.0)


def test_gae_returns_by_hand():
    """The rollout buffer our algorithms fill computes GAE(lambda) as the textbook recursion."""
    gamma, lam = 0.9, 0.8
    buffer = RolloutBuffer(3, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), device="cpu", gamma=gamma, gae_lambda=lam)
    rewards, values, starts = [1.0, 0.0, 2.0], [0.5, 1.0, -1.0], [1.0, 0.0, 0.0]
    for r, v, s in zip(rewards, values, starts):
        buffer.add(np.zeros((1, 1)), np.zeros((1, 1)), np.array([r]), np.array([s]), t([[v]]), t([0.0]))
    last_value, done = 3.0, np.array([False])
    buffer.compute_returns_and_advantage(last_values=t([[last_value]]), dones=done)
    d2 = 2.0 + gamma * last_value - (-1.0)
    d1 = 0.0 + gamma * -1.0 - 1.0
    d0 = 1.0 + gamma * 1.0 - 0.5
    a2 = d2
    a1 = d1 + gamma * lam * a2
    a0 = d0 + gamma * lam * a1
    np.testing.assert_allclose(buffer.advantages[:, 0], [a0, a1, a2], rtol=1e-6)
    np.testing.assert_allclose(buffer.returns[:, 0], np.array([a0, a1, a2]) + np.array(values), rtol=1e-6)
