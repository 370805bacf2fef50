"""PPO's and A2C's losses (:func:`lit_sb3.common.ppo_update.ppo_loss`, :func:`lit_sb3.algorithms.a2c.a2c.a2c_loss`)
for a seed axis: ``[N, batch]`` values, log-probabilities, entropies and minibatch fields in, ``[N]`` losses and
terms out, seed i's those of its own slices.

Written with an explicit seed axis instead of mapped over it with ``torch.vmap``: the same operations in the same
order, each reduction over one seed's row, so the results and gradients are the vmapped losses' to the last bit
(``tests/lit_sb3/seeds/test_group.py`` checks both against ``vmap``), without vmap's dispatch on every minibatch.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


def _normalized(advantages: torch.Tensor) -> torch.Tensor:
    """:func:`lit_sb3.common.losses.normalize_advantages` per seed (a single advantage is left as it is)."""
    if advantages.shape[1] <= 1:
        return advantages
    return (advantages - advantages.mean(1, keepdim=True)) / (advantages.std(1, keepdim=True) + 1e-8)


def ppo_loss(
    values: torch.Tensor,
    log_prob: torch.Tensor,
    entropy: torch.Tensor | None,
    batch: Any,
    *,
    clip_range: float,
    clip_range_vf: float | None,
    normalize_advantage: bool,
    ent_coef: float,
    vf_coef: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's loss per seed and its terms (SB3's names), as ``ppo_loss`` without a mask gives them."""
    advantages = _normalized(batch.advantages) if normalize_advantage else batch.advantages
    ratio = torch.exp(log_prob - batch.old_log_prob)
    unclipped = advantages * ratio
    clipped = advantages * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    pg_loss = -torch.min(unclipped, clipped).mean(1)
    clip_fraction = ((ratio - 1.0).abs() > clip_range).float().mean(1)
    if clip_range_vf is not None:
        values = batch.old_values + torch.clamp(values - batch.old_values, -clip_range_vf, clip_range_vf)
    v_loss = F.mse_loss(batch.returns, values, reduction="none").mean(1)
    ent_loss = log_prob.mean(1) if entropy is None else -entropy.mean(1)
    loss = pg_loss + ent_coef * ent_loss + vf_coef * v_loss
    with torch.no_grad():
        log_ratio = log_prob - batch.old_log_prob
        kl = ((torch.exp(log_ratio) - 1.0) - log_ratio).mean(1)
    terms = {
        "policy_gradient_loss": pg_loss,
        "value_loss": v_loss,
        "entropy_loss": ent_loss,
        "clip_fraction": clip_fraction,
        "approx_kl": kl,
    }
    return loss, terms


def a2c_loss(
    values: torch.Tensor,
    log_prob: torch.Tensor,
    entropy: torch.Tensor | None,
    batch: Any,
    *,
    normalize_advantage: bool,
    ent_coef: float,
    vf_coef: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """A2C's loss per seed and its terms (SB3's names), as ``a2c_loss`` gives them."""
    advantages = _normalized(batch.advantages) if normalize_advantage else batch.advantages
    pg_loss = -(advantages * log_prob).mean(1)
    v_loss = F.mse_loss(batch.returns, values, reduction="none").mean(1)
    ent_loss = log_prob.mean(1) if entropy is None else -entropy.mean(1)
    loss = pg_loss + ent_coef * ent_loss + vf_coef * v_loss
    return loss, {"policy_loss": pg_loss, "value_loss": v_loss, "entropy_loss": ent_loss}
