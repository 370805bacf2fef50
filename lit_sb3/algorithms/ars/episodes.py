"""What one ARS iteration iterates and counts: a one-tick "dataloader" per Lightning epoch, and the episodes a
candidate's evaluation ends (as SB3's ``evaluate_policy`` records them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np


class Iterations:
    """The training "dataloader" of ARS: one tick per Lightning epoch; the tick's training step is one iteration.

    It has a length so that Lightning treats each epoch as finite (checkpoints every N epochs = every N iterations).
    """

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[int]:
        yield 0


class EpisodeTally:
    """Episode returns and lengths as SB3's ``evaluate_policy`` records them.

    Each env ends ``targets[i]`` episodes; with a ``Monitor`` only its episode records count (a life lost in Atari
    is a ``done`` but no episode end), otherwise the rewards summed since the env's last episode end.
    """

    def __init__(self, targets: list[int], monitored: bool) -> None:
        self.targets = targets
        self.counts = [0] * len(targets)
        self.open = sum(targets)
        self.monitored = monitored
        self.current_rewards = np.zeros(len(targets))
        self.current_lengths = np.zeros(len(targets), dtype=int)
        self.rewards: list[float] = []
        self.lengths: list[int] = []

    def add(self, rewards: np.ndarray, dones: np.ndarray, infos: list[dict[str, Any]]) -> None:
        """Record one vector step."""
        self.current_rewards += rewards
        self.current_lengths += 1
        if not dones.any():
            return
        for i in map(int, np.flatnonzero(dones)):
            if self.counts[i] >= self.targets[i]:
                continue
            episode = infos[i].get("episode") if self.monitored else None
            if episode is not None:
                self._end(i, episode["r"], episode["l"])
            elif not self.monitored:
                self._end(i, float(self.current_rewards[i]), int(self.current_lengths[i]))
            self.current_rewards[i] = 0.0
            self.current_lengths[i] = 0

    def _end(self, env_idx: int, reward: float, length: int) -> None:
        self.rewards.append(reward)
        self.lengths.append(length)
        self.counts[env_idx] += 1
        self.open -= 1
