"""Loss math of the distributional algorithms (QR-DQN, TQC) as small pure functions."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def quantile_midpoints(n_quantiles: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The quantile fractions ``(i + 0.5) / n`` the ``n`` outputs of a quantile critic estimate."""
    return (torch.arange(n_quantiles, device=device, dtype=torch.float32) + 0.5) / n_quantiles


def quantile_huber_loss(
    current_quantiles: torch.Tensor,
    target_quantiles: torch.Tensor,
    taus: torch.Tensor | None = None,
    sum_over_quantiles: bool = True,
) -> torch.Tensor:
    """Quantile regression loss with a Huber (kappa = 1) penalty on every (current, target) quantile pair.

    ``current_quantiles`` is [batch, n] (QR-DQN) or [batch, n_critics, n] (TQC); ``target_quantiles`` has the same
    number of dimensions with any last size (a target of size 1 on the critic axis is shared by the critics). Each
    pair's Huber error is weighted by ``tau`` when the target lies above the estimate and by ``1 - tau`` below it.
    ``sum_over_quantiles`` sums over the current quantiles before averaging (QR-DQN's paper), else everything is
    averaged (TQC).
    """
    if current_quantiles.ndim != target_quantiles.ndim or current_quantiles.ndim not in (2, 3):
        raise ValueError(
            f"quantile_huber_loss: current and target quantiles must both be 2-D or 3-D, got shapes "
            f"{tuple(current_quantiles.shape)} and {tuple(target_quantiles.shape)}"
        )
    if taus is None:
        taus = quantile_midpoints(current_quantiles.shape[-1], current_quantiles.device)
    loss = pairwise_quantile_huber(current_quantiles, target_quantiles, taus)
    if sum_over_quantiles:
        return loss.sum(dim=-2).mean()
    return loss.mean()


def pairwise_quantile_huber(current: torch.Tensor, target: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
    """Every (current, target) pair's tau-weighted Huber error, ``[..., n_current, n_target]`` (before the loss's
    reduction; a seed group reduces it per seed)."""
    delta = target.unsqueeze(-2) - current.unsqueeze(-1)  # target minus estimate for every pair
    huber = F.huber_loss(delta, torch.zeros_like(delta), reduction="none", delta=1.0)
    tau = taus.reshape(-1, 1)
    weights = torch.where(delta.detach() < 0, 1.0 - tau, tau)
    return weights * huber


def truncated_quantiles(next_quantiles: torch.Tensor, n_to_drop_per_net: int) -> torch.Tensor:
    """TQC: pool the quantiles of every critic ([batch, n_critics, n]), sort them, drop the largest ones.

    ``n_to_drop_per_net * n_critics`` atoms are removed from the top of the pooled, sorted mixture.
    """
    batch, n_critics, n_quantiles = next_quantiles.shape
    n_kept = n_critics * (n_quantiles - n_to_drop_per_net)
    pooled = next_quantiles.reshape(batch, n_critics * n_quantiles)
    return torch.sort(pooled, dim=1).values[:, :n_kept]


def tqc_target(
    rewards: torch.Tensor,
    dones: torch.Tensor,
    discounts: torch.Tensor | float,
    next_quantiles: torch.Tensor,
    n_to_drop_per_net: int,
    next_log_prob: torch.Tensor,
    ent_coef: torch.Tensor | float,
) -> torch.Tensor:
    """TQC's soft distributional target [batch, 1, n_kept] from the target critics' next-state quantiles."""
    kept = truncated_quantiles(next_quantiles, n_to_drop_per_net)
    soft = kept - ent_coef * next_log_prob.reshape(-1, 1)
    return (rewards + (1.0 - dones) * discounts * soft).unsqueeze(1)


def tqc_actor_loss(log_prob: torch.Tensor, quantiles_pi: torch.Tensor, ent_coef: torch.Tensor | float) -> torch.Tensor:
    """E[alpha * log pi(a|s) - Q(s, a)] with Q the mean of every critic's quantiles ([batch, n_critics, n])."""
    q_pi = quantiles_pi.mean(dim=2).mean(dim=1, keepdim=True)
    return (ent_coef * log_prob.reshape(-1, 1) - q_pi).mean()


def qrdqn_target(
    rewards: torch.Tensor, dones: torch.Tensor, discounts: torch.Tensor | float, next_quantiles: torch.Tensor
) -> torch.Tensor:
    """QR-DQN's target [batch, n_quantiles]: the quantiles of the greedy next action (largest mean), backed up.

    ``next_quantiles`` is the target network's output [batch, n_quantiles, n_actions].
    """
    greedy = next_quantiles.mean(dim=1).argmax(dim=1)
    chosen = next_quantiles[torch.arange(next_quantiles.shape[0], device=next_quantiles.device), :, greedy]
    return rewards + (1.0 - dones) * discounts * chosen


def taken_action_quantiles(quantiles: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """The quantiles [batch, n_quantiles] of the taken actions from a QR-DQN output [batch, n_quantiles, n_actions]."""
    index = actions.long().reshape(-1, 1, 1).expand(-1, quantiles.shape[1], 1)
    return quantiles.gather(dim=2, index=index).squeeze(2)
