"""Target networks: (online, target) network pairs and their Polyak update."""

from __future__ import annotations

from typing import Any, Protocol

import torch
from stable_baselines3.common.utils import get_parameters_by_name

from lit_sb3.common.optim import soft_update
from lit_sb3.common.parts import Part
from lit_sb3.common.persistence import CHECKPOINT, StateFormat


class RefreshSettings(Protocol):
    """Where the collection-time refresh reads its settings (DQN, QR-DQN: the algorithm itself)."""

    target_update_interval: int  #: env steps between refreshes, over all envs
    tau: float  #: the Polyak coefficient of a refresh


class TargetNetworks(Part):
    """The target copies of an algorithm's networks: parameters Polyak-averaged, normalization statistics copied.

    The actor-critics call :meth:`update` in their gradient steps; with ``settings_of`` (DQN, QR-DQN) the networks
    update themselves during the collection, every ``target_update_interval`` env steps (counted over all envs, SB3's
    ``_n_calls``, kept in checkpoints) with coefficient ``tau``.

    :param pairs: (online, target) modules of the same architecture
    :param settings_of: the algorithm whose ``target_update_interval`` and ``tau`` are read at every env step, as
        SB3 reads them (a change after construction applies at once); None: only :meth:`update` updates
    """

    def __init__(
        self, *pairs: tuple[torch.nn.Module, torch.nn.Module], settings_of: RefreshSettings | None = None
    ) -> None:
        self.online_params = [p for online, _ in pairs for p in online.parameters()]
        self.target_params = [p for _, target in pairs for p in target.parameters()]
        self.online_stats = [s for online, _ in pairs for s in get_parameters_by_name(online, ["running_"])]
        self.target_stats = [s for _, target in pairs for s in get_parameters_by_name(target, ["running_"])]
        self.settings_of = settings_of
        self.n_calls = 0  # vector env steps seen

    def update(self, tau: float) -> None:
        """``target <- (1 - tau) * target + tau * online``; running statistics are copied as they are."""
        soft_update(self.online_params, self.target_params, tau)
        soft_update(self.online_stats, self.target_stats, 1.0)

    def on_step(self, progress_remaining: float, n_envs: int) -> None:
        algorithm = self.settings_of
        if algorithm is None:
            return
        self.n_calls += 1
        if self.n_calls % max(algorithm.target_update_interval // n_envs, 1) == 0:
            self.update(algorithm.tau)

    def state(self, fmt: StateFormat) -> dict[str, Any]:
        return {"n_calls": self.n_calls} if fmt == CHECKPOINT and self.settings_of is not None else {}

    def load_state(self, state: dict[str, Any], fmt: StateFormat) -> None:
        if fmt == CHECKPOINT and self.settings_of is not None:
            self.n_calls = int(state.get("n_calls", 0))
