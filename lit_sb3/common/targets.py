"""Target networks: (online, target) network pairs and their Polyak update."""

from __future__ import annotations

from typing import Any, Protocol

import torch
from stable_baselines3.common.utils import get_parameters_by_name

from lit_sb3.common.optim import soft_update
from lit_sb3.common.parts import Part
from lit_sb3.common.saved_state import CHECKPOINT, StateFormat


class RefreshSettings(Protocol):
    """Where the collection-time refresh reads its settings (DQN, QR-DQN: the algorithm itself)."""

    target_update_interval: int  #: env steps between refreshes, over all envs
    tau: float  #: the Polyak coefficient of a refresh


Pairs = tuple[tuple[torch.nn.Module, torch.nn.Module], ...]


def _group(pairs: Pairs) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """The parameters and the normalization statistics of the online networks and of the targets."""
    onlines, targets = [online for online, _ in pairs], [target for _, target in pairs]

    def stats(modules: list[torch.nn.Module]) -> list[torch.Tensor]:
        return [s for module in modules for s in get_parameters_by_name(module, ["running_"])]

    online_params: list[torch.Tensor] = [p for online in onlines for p in online.parameters()]
    return online_params, [p for target in targets for p in target.parameters()], stats(onlines), stats(targets)


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
        # One foreach call per group. A network in two pairs (TD3's shared features extractor: in the critic and in
        # the actor) is averaged once per pair, in turn, as SB3 does: one call over both pairs would scale it twice
        # before adding. Otherwise all pairs make one group.
        online_ids = [id(p) for online, _ in pairs for p in online.parameters()]
        groups = [pairs] if len(online_ids) == len(set(online_ids)) else [(pair,) for pair in pairs]
        self.groups = [_group(group) for group in groups]
        self.settings_of = settings_of
        self.n_calls = 0  # vector env steps seen

    def update(self, tau: float) -> None:
        """``target <- (1 - tau) * target + tau * online``; running statistics are copied as they are."""
        for online_params, target_params, online_stats, target_stats in self.groups:
            soft_update(online_params, target_params, tau)
            soft_update(online_stats, target_stats, 1.0)

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
