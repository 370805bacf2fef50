"""Target networks: (online, target) network pairs and their Polyak update."""

from __future__ import annotations

import torch
from stable_baselines3.common.utils import get_parameters_by_name

from lit_sb3.common.optim import soft_update


class TargetNetworks:
    """The target copies of an algorithm's networks: parameters Polyak-averaged, normalization statistics copied.

    :param pairs: (online, target) modules of the same architecture
    """

    def __init__(self, *pairs: tuple[torch.nn.Module, torch.nn.Module]) -> None:
        self.online_params = [p for online, _ in pairs for p in online.parameters()]
        self.target_params = [p for _, target in pairs for p in target.parameters()]
        self.online_stats = [s for online, _ in pairs for s in get_parameters_by_name(online, ["running_"])]
        self.target_stats = [s for _, target in pairs for s in get_parameters_by_name(target, ["running_"])]

    def update(self, tau: float) -> None:
        """``target <- (1 - tau) * target + tau * online``; running statistics are copied as they are."""
        soft_update(self.online_params, self.target_params, tau)
        soft_update(self.online_stats, self.target_stats, 1.0)
