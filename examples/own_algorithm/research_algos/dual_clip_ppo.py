"""Dual-clip PPO (Ye et al., 2020, "Mastering Complex Control in MOBA Games with Deep Reinforcement Learning").

PPO's clipped objective still grows without bound in the ratio when the advantage is negative (an action that became
much more likely and turned out bad): dual clipping bounds it below by ``dual_clip * A`` there.
"""

from __future__ import annotations

from typing import Any

import torch

from lit_sb3 import PPO


def dual_clip_surrogate_loss(
    advantages: torch.Tensor, log_prob: torch.Tensor, old_log_prob: torch.Tensor, clip_range: float, dual_clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate, bounded below by ``dual_clip * A`` where ``A < 0`` (as a loss, and the clip
    fraction). ``dual_clip = inf`` gives PPO's loss exactly."""
    ratio = torch.exp(log_prob - old_log_prob)
    surrogate = torch.min(advantages * ratio, advantages * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range))
    bounded = torch.where(advantages < 0, torch.max(surrogate, dual_clip * advantages), surrogate)
    return -bounded.mean(), ((ratio - 1.0).abs() > clip_range).float().mean()


class DualClipPPO(PPO):
    """PPO whose policy loss is the dual-clip surrogate; every other argument is PPO's.

    :param dual_clip: lower bound of the objective, in units of the (negative) advantage; > 1
    """

    def __init__(self, *args: Any, dual_clip: float = 3.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not dual_clip > 1.0:
            raise ValueError(f"dual_clip={dual_clip}: must be > 1")
        self.dual_clip = dual_clip

    def policy_loss(
        self,
        advantages: torch.Tensor,
        log_prob: torch.Tensor,
        old_log_prob: torch.Tensor,
        clip_range: float,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        assert mask is None, "PPO's minibatches have no padding"
        return dual_clip_surrogate_loss(advantages, log_prob, old_log_prob, clip_range, self.dual_clip)
