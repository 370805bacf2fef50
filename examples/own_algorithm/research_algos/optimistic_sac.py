"""SAC with a tunable pessimism of the critic target (after Moskovitz et al., 2021, "Tactical Optimism and Pessimism
for Deep Reinforcement Learning").

SAC regresses its critics on the smallest of the two target critics, a fixed amount of pessimism. Here the target's
next-state value is the critics' mean plus ``optimism`` times half their spread: -1 is SAC's minimum exactly, 0 their
mean, +1 their maximum.
"""

from __future__ import annotations

from typing import Any

import torch

from lit_sb3 import SAC


def optimistic_soft_target(
    rewards: torch.Tensor,
    dones: torch.Tensor,
    discounts: torch.Tensor | float,
    next_q: torch.Tensor,
    next_log_prob: torch.Tensor,
    ent_coef: torch.Tensor | float,
    optimism: float,
) -> torch.Tensor:
    """Soft Bellman target from ``mean + optimism * spread / 2`` of the next-state values ``[batch, n_critics]``
    (spread: max - min)."""
    spread = next_q.max(dim=1, keepdim=True).values - next_q.min(dim=1, keepdim=True).values
    next_v = next_q.mean(dim=1, keepdim=True) + 0.5 * optimism * spread - ent_coef * next_log_prob.reshape(-1, 1)
    return rewards + (1.0 - dones) * discounts * next_v


class OptimisticSAC(SAC):
    """SAC whose critic target has the pessimism ``optimism`` (-1: SAC); every other argument is SAC's.

    :param optimism: -1 SAC's clipped double-Q target, 0 the critics' mean, +1 their maximum
    """

    def __init__(self, *args: Any, optimism: float = -0.5, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.optimism = float(optimism)

    def critic_target_values(
        self,
        data: Any,
        discounts: torch.Tensor | float,
        next_q: torch.Tensor,
        next_log_prob: torch.Tensor,
        ent_coef: torch.Tensor,
    ) -> torch.Tensor:
        return optimistic_soft_target(
            data.rewards, data.dones, discounts, next_q, next_log_prob, ent_coef, self.optimism
        )
