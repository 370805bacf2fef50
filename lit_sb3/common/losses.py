"""Loss math of the algorithms as small pure functions (tensors in, tensors out; no modules, no state)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def normalize_advantages(advantages: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Zero mean, unit (sample) standard deviation; a single advantage is left as it is."""
    if advantages.numel() <= 1:
        return advantages
    return (advantages - advantages.mean()) / (advantages.std() + eps)


def clipped_surrogate_loss(
    advantages: torch.Tensor, log_prob: torch.Tensor, old_log_prob: torch.Tensor, clip_range: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped policy objective (as a loss to minimise) and the fraction of clipped ratios."""
    ratio = torch.exp(log_prob - old_log_prob)
    unclipped = advantages * ratio
    clipped = advantages * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    loss = -torch.min(unclipped, clipped).mean()
    clip_fraction = ((ratio - 1.0).abs() > clip_range).float().mean()
    return loss, clip_fraction


def value_loss(
    values: torch.Tensor, returns: torch.Tensor, old_values: torch.Tensor | None = None, clip_range_vf: float | None = None
) -> torch.Tensor:
    """MSE to the returns; with ``clip_range_vf`` the prediction may move at most that far from ``old_values``."""
    if clip_range_vf is not None:
        assert old_values is not None, "old_values are needed to clip the value function"
        values = old_values + torch.clamp(values - old_values, -clip_range_vf, clip_range_vf)
    return F.mse_loss(returns, values)


def entropy_loss(entropy: torch.Tensor | None, log_prob: torch.Tensor) -> torch.Tensor:
    """Negative entropy; distributions without a closed form use the ``-log_prob`` estimate."""
    if entropy is None:
        return log_prob.mean()
    return -entropy.mean()


def approx_kl(log_prob: torch.Tensor, old_log_prob: torch.Tensor) -> torch.Tensor:
    """Low-variance estimator of KL(old || new): E[(r - 1) - log r] (Schulman's k3)."""
    log_ratio = log_prob - old_log_prob
    return ((torch.exp(log_ratio) - 1.0) - log_ratio).mean()


def policy_gradient_loss(advantages: torch.Tensor, log_prob: torch.Tensor) -> torch.Tensor:
    """Vanilla (A2C) policy-gradient loss."""
    return -(advantages * log_prob).mean()
