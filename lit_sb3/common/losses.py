"""Loss math of the algorithms as small pure functions (tensors in, tensors out; no modules, no state)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def masked_mean(x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over the entries where ``mask`` is True (all entries without a mask): padded sequences do not count."""
    return x.mean() if mask is None else x[mask].mean()


def normalize_advantages(advantages: torch.Tensor, eps: float = 1e-8, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Zero mean, unit (sample) standard deviation over the unmasked entries; a single advantage is left as it is."""
    valid = advantages if mask is None else advantages[mask]
    if valid.numel() <= 1:
        return advantages
    return (advantages - valid.mean()) / (valid.std() + eps)


def clipped_surrogate_loss(
    advantages: torch.Tensor,
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    clip_range: float,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped policy objective (as a loss to minimise) and the fraction of clipped ratios."""
    ratio = torch.exp(log_prob - old_log_prob)
    unclipped = advantages * ratio
    clipped = advantages * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    loss = -masked_mean(torch.min(unclipped, clipped), mask)
    clip_fraction = masked_mean(((ratio - 1.0).abs() > clip_range).float(), mask)
    return loss, clip_fraction


def value_loss(
    values: torch.Tensor,
    returns: torch.Tensor,
    old_values: torch.Tensor | None = None,
    clip_range_vf: float | None = None,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """MSE to the returns; with ``clip_range_vf`` the prediction may move at most that far from ``old_values``."""
    if clip_range_vf is not None:
        assert old_values is not None, "old_values are needed to clip the value function"
        values = old_values + torch.clamp(values - old_values, -clip_range_vf, clip_range_vf)
    if mask is None:
        return F.mse_loss(returns, values)
    return masked_mean((returns - values) ** 2, mask)


def entropy_loss(
    entropy: torch.Tensor | None, log_prob: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Negative entropy; distributions without a closed form use the ``-log_prob`` estimate."""
    if entropy is None:
        return masked_mean(log_prob, mask)
    return -masked_mean(entropy, mask)


def approx_kl(log_prob: torch.Tensor, old_log_prob: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Low-variance estimator of KL(old || new): E[(r - 1) - log r] (Schulman's k3)."""
    log_ratio = log_prob - old_log_prob
    return masked_mean((torch.exp(log_ratio) - 1.0) - log_ratio, mask)


def surrogate_objective(advantages: torch.Tensor, log_prob: torch.Tensor, old_log_prob: torch.Tensor) -> torch.Tensor:
    """TRPO's importance-sampled policy objective (to maximise): E[A * pi(a|s) / pi_old(a|s)]."""
    return (advantages * torch.exp(log_prob - old_log_prob)).mean()


def policy_gradient_loss(advantages: torch.Tensor, log_prob: torch.Tensor) -> torch.Tensor:
    """Vanilla (A2C) policy-gradient loss."""
    return -(advantages * log_prob).mean()


# ---------------------------------------------------------------------- off-policy (SAC, TD3, DDPG, DQN)


def clipped_double_q_target(
    rewards: torch.Tensor,
    dones: torch.Tensor,
    discounts: torch.Tensor | float,
    next_q_values: torch.Tensor,
    next_log_prob: torch.Tensor | None = None,
    ent_coef: torch.Tensor | float = 0.0,
) -> torch.Tensor:
    """Bellman target from the smallest of the critics' next-state values (shape [batch, n_critics]).

    With ``next_log_prob`` it is SAC's soft target: the entropy bonus ``-ent_coef * log pi(a'|s')`` is added.
    ``discounts`` is gamma, or gamma**k per sample for n-step returns.
    """
    next_q = next_q_values.min(dim=1, keepdim=True).values
    if next_log_prob is not None:
        next_q = next_q - ent_coef * next_log_prob.reshape(-1, 1)
    return rewards + (1.0 - dones) * discounts * next_q


def critics_mse_loss(
    current_q_values: tuple[torch.Tensor, ...] | list[torch.Tensor], target_q: torch.Tensor
) -> torch.Tensor:
    """Sum over the critics of their mean squared error to the (shared) target."""
    return torch.stack([F.mse_loss(q, target_q) for q in current_q_values]).sum()


def sac_actor_loss(log_prob: torch.Tensor, q_values_pi: torch.Tensor, ent_coef: torch.Tensor | float) -> torch.Tensor:
    """E[alpha * log pi(a|s) - min_i Q_i(s, a)], a ~ pi (reparameterized); ``q_values_pi`` is [batch, n_critics]."""
    min_q = q_values_pi.min(dim=1, keepdim=True).values
    return (ent_coef * log_prob.reshape(-1, 1) - min_q).mean()


def entropy_coef_loss(log_ent_coef: torch.Tensor, log_prob: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """Loss of the learned temperature: pushes the policy entropy (-log_prob) towards ``target_entropy``."""
    return -(log_ent_coef * (log_prob.reshape(-1, 1) + target_entropy).detach()).mean()


def smoothed_target_actions(target_actions: torch.Tensor, noise: torch.Tensor, noise_clip: float) -> torch.Tensor:
    """TD3's target policy smoothing: clipped noise on the target actor's action, kept in [-1, 1]."""
    return (target_actions + noise.clamp(-noise_clip, noise_clip)).clamp(-1.0, 1.0)


def dqn_target(
    rewards: torch.Tensor, dones: torch.Tensor, discounts: torch.Tensor | float, next_q_values: torch.Tensor
) -> torch.Tensor:
    """One-step Q-learning target from the target network's values of every next action ([batch, n_actions])."""
    next_q = next_q_values.max(dim=1, keepdim=True).values
    return rewards + (1.0 - dones) * discounts * next_q


def q_huber_loss(q_values: torch.Tensor, actions: torch.Tensor, target_q: torch.Tensor) -> torch.Tensor:
    """Huber (smooth L1) loss between the Q-values of the taken actions and the target."""
    taken = torch.gather(q_values, dim=1, index=actions.long().reshape(-1, 1))
    return F.smooth_l1_loss(taken, target_q)
