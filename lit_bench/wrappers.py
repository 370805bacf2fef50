"""Gymnasium wrappers the env configs use (``wrappers:`` nodes with ``_partial_: true``)."""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

# The position entries of the classic-control observations: keeping only these makes the env partially observed
# (the RL Zoo's "NoVel" variants), so a policy needs memory to infer the velocities.
POSITION_INDICES = {
    "CartPole-v1": (0, 2),  # cart position, pole angle (drops cart velocity, pole angular velocity)
    "Pendulum-v1": (0, 1),  # cos(theta), sin(theta) (drops angular velocity)
    "MountainCar-v0": (0,),
    "MountainCarContinuous-v0": (0,),
}


class KeepObservationEntries(gym.ObservationWrapper):
    """Observe only the entries ``keep`` of a flat Box observation (default: the env's positions, no velocities)."""

    def __init__(self, env: gym.Env, keep: Sequence[int] | None = None) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"keep: needs a flat Box observation space, got {space}")
        if keep is None:
            env_id = env.spec.id if env.spec is not None else None
            if env_id not in POSITION_INDICES:
                raise ValueError(f"keep: no default for env {env_id!r}; give the indices (defaults exist for "
                                 f"{', '.join(POSITION_INDICES)})")
            keep = POSITION_INDICES[env_id]
        self.keep = np.asarray(keep, dtype=np.int64)
        if self.keep.size == 0 or self.keep.min() < 0 or self.keep.max() >= space.shape[0]:
            raise ValueError(f"keep: indices must lie in [0, {space.shape[0]}), got {list(keep)}")
        self.observation_space = spaces.Box(space.low[self.keep], space.high[self.keep], dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self.keep]
