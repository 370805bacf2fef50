"""Quantile losses and targets (QR-DQN, TQC) and the shared entropy / exploration helpers on hand-computed values."""

import numpy as np
import pytest
import torch
from sb3_contrib.common.utils import quantile_huber_loss as contrib_quantile_huber_loss

from lit_sb3.common import entropy, quantile


def test_quantile_midpoints():
    assert torch.allclose(quantile.quantile_midpoints(4), torch.tensor([0.125, 0.375, 0.625, 0.875]))


def test_quantile_huber_loss_hand_computed():
    # two quantiles (tau 0.25, 0.75) at 0 and 2; target atoms 1 and 0.5
    current = torch.tensor([[0.0, 2.0]])
    target = torch.tensor([[1.0, 0.5]])
    # pairs (target - current): tau .25: +1 -> .5*.25, +.5 -> .125*.25 ; tau .75: -1 -> .5*.25, -1.5 -> (1.5-.5)*.25
    pair_losses = torch.tensor([[0.125, 0.03125], [0.125, 0.25]])
    summed = pair_losses.sum(dim=0).mean()  # sum over current quantiles, mean over target atoms
    assert quantile.quantile_huber_loss(current, target).item() == pytest.approx(summed.item())
    assert summed.item() == pytest.approx(0.265625)
    assert quantile.quantile_huber_loss(current, target, sum_over_quantiles=False).item() == pytest.approx(0.1328125)


def test_quantile_huber_loss_asymmetric_gradient():
    # both quantiles (tau 0.25, 0.75) far below the target: each is pushed up with weight tau (Huber's linear part)
    current = torch.zeros(1, 2, requires_grad=True)
    quantile.quantile_huber_loss(current, torch.tensor([[3.0]])).backward()
    assert torch.allclose(current.grad, torch.tensor([[-0.25, -0.75]]))
    # far above it: pushed down with weight 1 - tau
    current = torch.zeros(1, 2, requires_grad=True)
    quantile.quantile_huber_loss(current, torch.tensor([[-3.0]])).backward()
    assert torch.allclose(current.grad, torch.tensor([[0.75, 0.25]]))


@pytest.mark.parametrize("shapes", [((8, 5), (8, 7)), ((8, 3, 5), (8, 1, 11)), ((8, 2, 4), (8, 2, 4))])
@pytest.mark.parametrize("summed", [True, False])
def test_quantile_huber_loss_equals_sb3_contrib(shapes, summed):
    gen = torch.Generator().manual_seed(0)
    current = torch.randn(*shapes[0], generator=gen) * 2
    target = torch.randn(*shapes[1], generator=gen) * 2
    ours = quantile.quantile_huber_loss(current, target, sum_over_quantiles=summed)
    ref = contrib_quantile_huber_loss(current, target, sum_over_quantiles=summed)
    assert ours.item() == pytest.approx(ref.item(), abs=1e-6)


def test_quantile_huber_loss_refuses_mismatched_dimensions():
    with pytest.raises(ValueError, match="quantile_huber_loss: current and target quantiles must both be 2-D or 3-D"):
        quantile.quantile_huber_loss(torch.zeros(2, 3), torch.zeros(2, 1, 3))


def test_tqc_truncation_drops_the_largest_pooled_atoms():
    next_quantiles = torch.tensor([[[1.0, 5.0, 3.0], [4.0, 0.0, 6.0]]])  # 2 critics x 3 quantiles
    kept = quantile.truncated_quantiles(next_quantiles, n_to_drop_per_net=1)
    assert torch.equal(kept, torch.tensor([[0.0, 1.0, 3.0, 4.0]]))  # 5 and 6 (1 per critic) dropped
    assert torch.equal(quantile.truncated_quantiles(next_quantiles, 0), torch.tensor([[0.0, 1.0, 3.0, 4.0, 5.0, 6.0]]))
    assert torch.equal(quantile.truncated_quantiles(next_quantiles, 2), torch.tensor([[0.0, 1.0]]))


def test_tqc_target_soft_backup_and_terminals():
    next_quantiles = torch.tensor([[[1.0, 5.0, 3.0], [4.0, 0.0, 6.0]]]).repeat(2, 1, 1)
    rewards, dones = torch.tensor([[1.0], [2.0]]), torch.tensor([[0.0], [1.0]])
    target = quantile.tqc_target(rewards, dones, 0.5, next_quantiles, 1, torch.tensor([-2.0, -2.0]), ent_coef=0.5)
    assert target.shape == (2, 1, 4)
    # kept [0, 1, 3, 4] + entropy bonus 0.5 * 2 -> [1, 2, 4, 5]; 1 + 0.5 * that ; terminal: the reward alone
    assert torch.allclose(target[0, 0], torch.tensor([1.5, 2.0, 3.0, 3.5]))
    assert torch.allclose(target[1, 0], torch.full((4,), 2.0))


def test_tqc_actor_loss_averages_every_quantile_of_every_critic():
    quantiles_pi = torch.tensor([[[1.0, 3.0], [5.0, 7.0]]])  # mean 4
    assert quantile.tqc_actor_loss(torch.tensor([-1.0]), quantiles_pi, 0.5).item() == pytest.approx(-4.5)


def test_qrdqn_target_follows_the_greedy_next_action():
    # batch 0: action 0 quantiles [1, 3] (mean 2), action 1 [0, 5] (mean 2.5) -> greedy action 1
    next_quantiles = torch.tensor([[[1.0, 0.0], [3.0, 5.0]], [[9.0, 0.0], [9.0, 0.0]]])  # [batch, quantile, action]
    rewards, dones = torch.tensor([[1.0], [2.0]]), torch.tensor([[0.0], [1.0]])
    target = quantile.qrdqn_target(rewards, dones, 0.5, next_quantiles)
    assert torch.allclose(target, torch.tensor([[1.0, 3.5], [2.0, 2.0]]))


def test_taken_action_quantiles():
    quantiles = torch.arange(12.0).reshape(2, 3, 2)  # [batch, quantile, action]
    taken = quantile.taken_action_quantiles(quantiles, torch.tensor([[1], [0]]))
    assert torch.equal(taken, torch.tensor([[1.0, 3.0, 5.0], [6.0, 8.0, 10.0]]))


def test_initial_ent_coef_forms():
    assert entropy.initial_ent_coef("auto") == (1.0, True)
    assert entropy.initial_ent_coef("auto_0.1") == (0.1, True)
    assert entropy.initial_ent_coef(0.2) == (0.2, False)
    for bad in ("auto_-1", "auto_x", "fixed", -0.1, True):
        with pytest.raises(ValueError, match="ent_coef: must be a float >= 0, 'auto'"):
            entropy.initial_ent_coef(bad)
    with pytest.raises(ValueError, match="target_entropy: must be 'auto' or a float"):
        entropy.validate_entropy_args("auto", "high")
    assert np.isfinite(entropy.initial_ent_coef(1)[0])
