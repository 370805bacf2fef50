"""Target networks: (online, target) network pairs and their Polyak update."""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.utils import get_parameters_by_name

from lit_sb3.common.optim import soft_update
from lit_sb3.common.parts import Part
from lit_sb3.common.persistence import CHECKPOINT, StateFormat


class TargetNetworks(Part):
    """The target copies of an algorithm's networks: parameters Polyak-averaged, normalization statistics copied.

    The actor-critics call :meth:`update` in their gradient steps; with ``every_env_steps`` (DQN, QR-DQN) the
    networks update themselves every that many env steps of the collection (counted over all envs, SB3's
    ``_n_calls``, kept in checkpoints).

    :param pairs: (online, target) modules of the same architecture
    :param every_env_steps: update after every this many env steps (None: only when :meth:`update` is called)
    :param tau: the Polyak coefficient of those updates
    """

    def __init__(
        self, *pairs: tuple[torch.nn.Module, torch.nn.Module], every_env_steps: int | None = None, tau: float = 1.0
    ) -> None:
        self.online_params = [p for online, _ in pairs for p in online.parameters()]
        self.target_params = [p for _, target in pairs for p in target.parameters()]
        self.online_stats = [s for online, _ in pairs for s in get_parameters_by_name(online, ["running_"])]
        self.target_stats = [s for _, target in pairs for s in get_parameters_by_name(target, ["running_"])]
        self.every_env_steps, self.tau = every_env_steps, tau
        self.n_calls = 0  # vector env steps seen

    def update(self, tau: float) -> None:
        """``target <- (1 - tau) * target + tau * online``; running statistics are copied as they are."""
        soft_update(self.online_params, self.target_params, tau)
        soft_update(self.online_stats, self.target_stats, 1.0)

    def on_step(self, progress_remaining: float, n_envs: int) -> None:
        if self.every_env_steps is None:
            return
        self.n_calls += 1
        if self.n_calls % max(self.every_env_steps // n_envs, 1) == 0:
            self.update(self.tau)

    def state(self, fmt: StateFormat) -> dict[str, Any]:
        return {"n_calls": self.n_calls} if fmt == CHECKPOINT and self.every_env_steps is not None else {}

    def load_state(self, state: dict[str, Any], fmt: StateFormat) -> None:
        if fmt == CHECKPOINT and self.every_env_steps is not None:
            self.n_calls = int(state.get("n_calls", 0))
