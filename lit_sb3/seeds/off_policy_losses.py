"""lit_sb3's off-policy losses (:mod:`lit_sb3.common.losses`, QR-DQN's and TQC's of :mod:`lit_sb3.common.quantile`)
for a seed axis: each takes ``[N, batch, ...]`` tensors and gives ``[N]`` losses (or ``[N, batch, ...]`` targets),
seed i's the pure loss of seed i's slices.

They are the pure losses written with an explicit seed axis instead of mapped over it with ``torch.vmap``: the same
operations on the same values, seed i's reductions over its own slice, so the results are bit-identical to the
vmapped losses (``tests/lit_sb3/seeds/test_off_policy.py`` checks each against ``vmap``), while a vmapped call costs
~0.3 ms of Python dispatch per call, a fifth of a DQN CartPole gradient step of 5 seeds.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lit_sb3.common import quantile

_PER_SEED = (1, 2)  # a ``[N, batch, 1]`` tensor's dimensions reduced per seed


def dqn_target(rewards: torch.Tensor, dones: torch.Tensor, gamma: float, next_q_values: torch.Tensor) -> torch.Tensor:
    """:func:`lit_sb3.common.losses.dqn_target` per seed: ``next_q_values`` ``[N, batch, n_actions]``."""
    next_q = next_q_values.max(dim=2, keepdim=True).values
    return rewards + (1.0 - dones) * gamma * next_q


def q_huber_loss(q_values: torch.Tensor, actions: torch.Tensor, target_q: torch.Tensor) -> torch.Tensor:
    """:func:`lit_sb3.common.losses.q_huber_loss` per seed, ``[N]``."""
    taken = torch.gather(q_values, dim=2, index=actions.long().reshape(q_values.shape[0], -1, 1))
    return F.smooth_l1_loss(taken, target_q, reduction="none").mean(dim=_PER_SEED)


def qrdqn_target(
    rewards: torch.Tensor, dones: torch.Tensor, gamma: float, next_quantiles: torch.Tensor
) -> torch.Tensor:
    """:func:`lit_sb3.common.quantile.qrdqn_target` per seed: ``next_quantiles`` ``[N, batch, n_quantiles,
    n_actions]``, the target ``[N, batch, n_quantiles]``."""
    greedy = next_quantiles.mean(dim=2).argmax(dim=2)
    index = greedy[:, :, None, None].expand(-1, -1, next_quantiles.shape[2], 1)
    chosen = next_quantiles.gather(dim=3, index=index).squeeze(3)
    return rewards + (1.0 - dones) * gamma * chosen


def taken_action_quantiles(quantiles: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """:func:`lit_sb3.common.quantile.taken_action_quantiles` per seed, ``[N, batch, n_quantiles]``."""
    n, batch, n_quantiles, _ = quantiles.shape
    index = actions.long().reshape(n, batch, 1, 1).expand(-1, -1, n_quantiles, 1)
    return quantiles.gather(dim=3, index=index).squeeze(3)


def quantile_huber_loss(
    current: torch.Tensor, target: torch.Tensor, taus: torch.Tensor, sum_over_quantiles: bool = True
) -> torch.Tensor:
    """:func:`lit_sb3.common.quantile.quantile_huber_loss` per seed, ``[N]``: QR-DQN's ``current`` and ``target``
    ``[N, batch, n_quantiles]`` (summed over the current quantiles, then averaged), TQC's ``[N, batch, n_critics,
    n_quantiles]`` and ``[N, batch, 1, n_kept]`` (``sum_over_quantiles=False``: averaged)."""
    loss = quantile.pairwise_quantile_huber(current, target, taus)
    if sum_over_quantiles:
        loss = loss.sum(dim=-2)
    return loss.mean(dim=tuple(range(1, loss.ndim)))


def tqc_target(
    rewards: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
    next_quantiles: torch.Tensor,
    n_to_drop_per_net: int,
    next_log_prob: torch.Tensor,
    ent_coef: torch.Tensor,
) -> torch.Tensor:
    """:func:`lit_sb3.common.quantile.tqc_target` per seed: ``next_quantiles`` ``[N, batch, n_critics,
    n_quantiles]``, each seed's ``ent_coef`` ``[N, 1]``; the target ``[N, batch, 1, n_kept]``."""
    n, batch, n_critics, n_quantiles = next_quantiles.shape
    n_kept = n_critics * (n_quantiles - n_to_drop_per_net)
    pooled = next_quantiles.reshape(n, batch, n_critics * n_quantiles)
    kept = torch.sort(pooled, dim=2).values[:, :, :n_kept]
    soft = kept - ent_coef.unsqueeze(1) * next_log_prob.reshape(n, batch, 1)
    return (rewards + (1.0 - dones) * gamma * soft).unsqueeze(2)


def tqc_actor_loss(log_prob: torch.Tensor, quantiles_pi: torch.Tensor, ent_coef: torch.Tensor) -> torch.Tensor:
    """:func:`lit_sb3.common.quantile.tqc_actor_loss` per seed (``quantiles_pi`` ``[N, batch, n_critics,
    n_quantiles]``, ``ent_coef`` ``[N, 1]``), ``[N]``."""
    q_pi = quantiles_pi.mean(dim=3).mean(dim=2, keepdim=True)
    return (ent_coef.unsqueeze(1) * log_prob.reshape(q_pi.shape) - q_pi).mean(dim=_PER_SEED)


def clipped_double_q_target(
    rewards: torch.Tensor,
    dones: torch.Tensor,
    gamma: float,
    next_q_values: torch.Tensor,
    next_log_prob: torch.Tensor | None = None,
    ent_coef: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`lit_sb3.common.losses.clipped_double_q_target` per seed: ``next_q_values`` ``[N, batch, n_critics]``;
    SAC's soft target with ``next_log_prob`` ``[N, batch, 1]`` and each seed's ``ent_coef`` ``[N, 1]``."""
    next_q = next_q_values.min(dim=2, keepdim=True).values
    if next_log_prob is not None:
        assert ent_coef is not None  # SAC gives both
        next_q = next_q - ent_coef.unsqueeze(1) * next_log_prob.reshape(next_q.shape)
    return rewards + (1.0 - dones) * gamma * next_q


def critics_mse_loss(current_q_values: tuple[torch.Tensor, ...], target_q: torch.Tensor) -> torch.Tensor:
    """:func:`lit_sb3.common.losses.critics_mse_loss` per seed, ``[N]``."""
    per_critic = [F.mse_loss(q, target_q, reduction="none").mean(dim=_PER_SEED) for q in current_q_values]
    return torch.stack(per_critic, dim=1).sum(dim=1)


def sac_actor_loss(log_prob: torch.Tensor, q_values_pi: torch.Tensor, ent_coef: torch.Tensor) -> torch.Tensor:
    """:func:`lit_sb3.common.losses.sac_actor_loss` per seed (``ent_coef`` ``[N, 1]``), ``[N]``."""
    min_q = q_values_pi.min(dim=2, keepdim=True).values
    return (ent_coef.unsqueeze(1) * log_prob.reshape(min_q.shape) - min_q).mean(dim=_PER_SEED)


def entropy_coef_loss(log_ent_coef: torch.Tensor, log_prob: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """:func:`lit_sb3.common.losses.entropy_coef_loss` per seed (``log_ent_coef`` ``[N, 1]``), ``[N]``."""
    shape = (log_prob.shape[0], -1, 1)
    return -(log_ent_coef.unsqueeze(1) * (log_prob.reshape(shape) + target_entropy).detach()).mean(dim=_PER_SEED)
