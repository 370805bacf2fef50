"""The examples' research variants (examples/own_algorithm): each is its base exactly at the neutral setting of its
new argument, differs from it otherwise, and plugs into its base through the hook it overrides."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from lit_sb3 import PPO, SAC
from lit_sb3.common import losses

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "own_algorithm"))
from research_algos import DualClipPPO, OptimisticSAC, dual_clip_surrogate_loss, optimistic_soft_target


def test_dual_clip_is_ppo_without_its_bound_and_bounds_negative_advantages():
    advantages = torch.tensor([1.0, -1.0, -2.0, 0.5])
    old = torch.zeros(4)
    log_prob = torch.log(torch.tensor([1.1, 5.0, 1.0, 0.5]))  # ratios 1.1, 5, 1, 0.5
    ppo, ppo_clipped = losses.clipped_surrogate_loss(advantages, log_prob, old, 0.2)
    same, same_clipped = dual_clip_surrogate_loss(advantages, log_prob, old, 0.2, float("inf"))
    assert torch.equal(ppo, same) and torch.equal(ppo_clipped, same_clipped)
    # ratio 5 on A = -1: PPO's objective -5 (min of -5 and -1.2), dual clip 3 bounds it at -3; the rest as PPO's
    bounded, _ = dual_clip_surrogate_loss(advantages, log_prob, old, 0.2, 3.0)
    assert bounded.item() == pytest.approx(-(1.1 - 3.0 - 2.0 + 0.25) / 4)
    assert ppo.item() == pytest.approx(-(1.1 - 5.0 - 2.0 + 0.25) / 4)


def test_optimism_minus_one_is_sacs_target_and_zero_the_mean():
    rewards, dones = torch.tensor([[1.0], [0.5]]), torch.tensor([[0.0], [1.0]])
    next_q, next_log_prob = torch.tensor([[2.0, 4.0], [1.0, 3.0]]), torch.tensor([0.5, -0.5])
    sac = losses.clipped_double_q_target(rewards, dones, 0.99, next_q, next_log_prob, 0.1)
    assert torch.allclose(optimistic_soft_target(rewards, dones, 0.99, next_q, next_log_prob, 0.1, -1.0), sac)
    mean = optimistic_soft_target(rewards, dones, 0.99, next_q, next_log_prob, 0.1, 0.0)
    assert mean[0].item() == pytest.approx(1.0 + 0.99 * (3.0 - 0.05)) and mean[1].item() == 0.5


def test_the_variants_override_their_bases_hooks():
    assert DualClipPPO.policy_loss is not PPO.policy_loss and DualClipPPO.compute_loss is PPO.compute_loss
    assert OptimisticSAC.critic_target_values is not SAC.critic_target_values
    assert OptimisticSAC.gradient_updates is SAC.gradient_updates
    with pytest.raises(ValueError, match=r"dual_clip=1.0: must be > 1"):
        DualClipPPO("MlpPolicy", dual_clip=1.0)
