"""Off-policy targets and losses on hand-computed values."""

import pytest
import torch

from lit_sb3.common import losses
from lit_sb3.common.off_policy_args import as_train_freq
from lit_sb3.common.optim import soft_update


def test_clipped_double_q_target_takes_min_and_masks_terminals():
    rewards = torch.tensor([[1.0], [2.0]])
    dones = torch.tensor([[0.0], [1.0]])
    next_q = torch.tensor([[5.0, 3.0], [7.0, 9.0]])
    target = losses.clipped_double_q_target(rewards, dones, 0.5, next_q)
    # 1 + 0.5 * min(5, 3) = 2.5 ; terminal: 2
    assert torch.allclose(target, torch.tensor([[2.5], [2.0]]))


def test_soft_q_target_subtracts_entropy_bonus():
    rewards = torch.tensor([[1.0]])
    dones = torch.tensor([[0.0]])
    next_q = torch.tensor([[4.0, 6.0]])
    next_log_prob = torch.tensor([-2.0])
    target = losses.clipped_double_q_target(rewards, dones, 0.9, next_q, next_log_prob, ent_coef=0.5)
    # 1 + 0.9 * (4 - 0.5 * -2) = 1 + 0.9 * 5 = 5.5
    assert torch.allclose(target, torch.tensor([[5.5]]))


def test_n_step_discounts_per_sample():
    target = losses.clipped_double_q_target(
        torch.zeros(2, 1), torch.zeros(2, 1), torch.tensor([[0.5], [0.25]]), torch.tensor([[4.0], [4.0]])
    )
    assert torch.allclose(target, torch.tensor([[2.0], [1.0]]))


def test_critics_mse_loss_sums_over_critics():
    target = torch.tensor([[1.0], [3.0]])
    q1 = torch.tensor([[0.0], [3.0]])  # mse 0.5
    q2 = torch.tensor([[1.0], [1.0]])  # mse 2.0
    assert losses.critics_mse_loss((q1, q2), target).item() == pytest.approx(2.5)


def test_sac_actor_loss():
    log_prob = torch.tensor([-1.0, 0.5])
    q_pi = torch.tensor([[2.0, 3.0], [1.0, -1.0]])
    # mean(0.2 * -1 - 2, 0.2 * 0.5 - (-1)) = mean(-2.2, 1.1) = -0.55
    assert losses.sac_actor_loss(log_prob, q_pi, 0.2).item() == pytest.approx(-0.55)


def test_entropy_coef_loss_value_and_gradient_direction():
    log_alpha = torch.zeros(1, requires_grad=True)
    log_prob = torch.tensor([0.5, 1.5])  # entropy estimate -1 < target 1 -> alpha must grow
    loss = losses.entropy_coef_loss(log_alpha, log_prob, target_entropy=1.0)
    assert loss.item() == pytest.approx(0.0)
    loss.backward()
    # d/dlog_alpha = -mean(log_prob + target) = -2 -> a gradient step increases log_alpha
    assert log_alpha.grad.item() == pytest.approx(-2.0)


def test_smoothed_target_actions_clip_noise_and_range():
    actions = torch.tensor([[0.9, -0.2, 0.0]])
    noise = torch.tensor([[0.4, -1.0, 0.1]])
    out = losses.smoothed_target_actions(actions, noise, noise_clip=0.5)
    assert torch.allclose(out, torch.tensor([[1.0, -0.7, 0.1]]))


def test_dqn_target_and_huber_loss():
    rewards = torch.tensor([[1.0], [0.0]])
    dones = torch.tensor([[0.0], [1.0]])
    next_q = torch.tensor([[1.0, 3.0], [10.0, 2.0]])
    target = losses.dqn_target(rewards, dones, 0.5, next_q)
    assert torch.allclose(target, torch.tensor([[2.5], [0.0]]))
    q = torch.tensor([[2.0, 0.0], [5.0, 0.5]])
    actions = torch.tensor([[0], [1]])
    # errors: 2 - 2.5 = -0.5 -> 0.125 ; 0.5 - 0 = 0.5 -> 0.125 ; mean 0.125
    assert losses.q_huber_loss(q, actions, target).item() == pytest.approx(0.125)
    # a large error is linear: |3| - 0.5
    assert losses.q_huber_loss(torch.tensor([[3.0]]), torch.tensor([[0]]), torch.zeros(1, 1)).item() == 2.5


def test_soft_update_is_polyak_average():
    params = [torch.tensor([1.0, 2.0])]
    targets = [torch.tensor([0.0, 0.0])]
    soft_update(params, targets, 0.25)
    assert torch.allclose(targets[0], torch.tensor([0.25, 0.5]))
    soft_update(params, targets, 1.0)
    assert torch.allclose(targets[0], params[0])


def test_train_freq_forms():
    assert as_train_freq(4) == (4, as_train_freq((1, "step")).unit)
    assert as_train_freq([2, "episode"]).unit.value == "episode"
    with pytest.raises(ValueError, match="train_freq: unit must be one of 'step', 'episode'"):
        as_train_freq((2, "epoch"))
    with pytest.raises(ValueError, match="train_freq"):
        as_train_freq(0)
