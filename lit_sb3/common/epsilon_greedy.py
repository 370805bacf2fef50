"""Epsilon-greedy exploration of the Q-learning algorithms (DQN, QR-DQN)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.utils import LinearSchedule

from lit_sb3.common.parts import Part
from lit_sb3.common.saved_state import CHECKPOINT, StateFormat


class EpsilonGreedy(Part):
    """The probability ``exploration_rate`` of a uniformly random action, moved along SB3's linear schedule of the
    progress remaining after every vector env step (from ``exploration_initial_eps`` to ``exploration_final_eps``
    over the first ``exploration_fraction`` of the budget).

    :param exploration_initial_eps: probability at the start of training
    :param exploration_final_eps: probability once ``exploration_fraction`` of the budget is spent
    :param exploration_fraction: fraction of the training budget over which the probability decays
    """

    sb3_names = (
        "exploration_rate",
        "exploration_schedule",
        "exploration_initial_eps",
        "exploration_final_eps",
        "exploration_fraction",
    )

    def __init__(
        self, exploration_initial_eps: float, exploration_final_eps: float, exploration_fraction: float
    ) -> None:
        for name, value, ok, rule in (
            ("exploration_fraction", exploration_fraction, 0.0 < exploration_fraction <= 1.0, "in (0, 1]"),
            ("exploration_initial_eps", exploration_initial_eps, 0.0 <= exploration_initial_eps <= 1.0, "in [0, 1]"),
            ("exploration_final_eps", exploration_final_eps, 0.0 <= exploration_final_eps <= 1.0, "in [0, 1]"),
        ):
            if not ok:
                raise ValueError(f"{name}: must be {rule}, got {value}")
        self.exploration_initial_eps = exploration_initial_eps
        self.exploration_final_eps = exploration_final_eps
        self.exploration_fraction = exploration_fraction
        self.exploration_schedule = LinearSchedule(exploration_initial_eps, exploration_final_eps, exploration_fraction)
        self.exploration_rate = 0.0

    def on_step(self, progress_remaining: float, n_envs: int) -> None:
        self.exploration_rate = self.exploration_schedule(progress_remaining)

    def explores(self) -> bool:
        """One draw from NumPy's global generator, as SB3 draws it."""
        return np.random.rand() < self.exploration_rate

    def record(self, record: Callable[..., None]) -> None:
        record("rollout/exploration_rate", self.exploration_rate)

    def state(self, fmt: StateFormat) -> dict[str, Any]:
        return {"exploration_rate": self.exploration_rate} if fmt == CHECKPOINT else {}

    def load_state(self, state: dict[str, Any], fmt: StateFormat) -> None:
        if fmt == CHECKPOINT:
            self.exploration_rate = float(state.get("exploration_rate", 0.0))
