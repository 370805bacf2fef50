"""Gymnasium wrappers the env configs use (``wrappers:`` nodes with ``_partial_: true``), and the RL Zoo's
partially observed ``*NoVel`` ids, registered on import (env configs name this module as their ``package``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

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
                raise ValueError(
                    f"keep: no default for env {env_id!r}; give the indices (defaults exist for "
                    f"{', '.join(POSITION_INDICES)})"
                )
            keep = POSITION_INDICES[env_id]
        self.keep = np.asarray(keep, dtype=np.int64)
        if self.keep.size == 0 or self.keep.min() < 0 or self.keep.max() >= space.shape[0]:
            raise ValueError(f"keep: indices must lie in [0, {space.shape[0]}), got {list(keep)}")
        self.observation_space = spaces.Box(space.low[self.keep], space.high[self.keep], dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[self.keep]


def no_velocity_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``env_id`` observing its positions only (the entry point of the ``*NoVel`` ids registered below)."""
    return KeepObservationEntries(gym.make(env_id, **kwargs))


# The RL Zoo's ids (rl_zoo3/import_envs.py registers the same names), so that references map one to one.
NO_VELOCITY_IDS = {
    "CartPoleNoVel-v1": "CartPole-v1",
    "PendulumNoVel-v1": "Pendulum-v1",
    "MountainCarContinuousNoVel-v0": "MountainCarContinuous-v0",
}
for _new_id, _base_id in NO_VELOCITY_IDS.items():
    if _new_id not in gym.envs.registry:
        gym.register(_new_id, entry_point="lit_bench.wrappers:no_velocity_env", kwargs={"env_id": _base_id})


class FrameSkip(gym.Wrapper):
    """Repeat each action ``skip`` times and sum the rewards, without max-pooling frames (the RL Zoo's CarRacing
    setting; SB3's ``MaxAndSkipEnv`` also max-pools, which Atari needs and CarRacing does not)."""

    def __init__(self, env: gym.Env, skip: int = 4) -> None:
        super().__init__(env)
        if skip < 1:
            raise ValueError(f"skip: must be >= 1, got {skip}")
        self.skip = skip

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        total = 0.0
        for _ in range(self.skip):
            observation, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                break
        return observation, total, terminated, truncated, info


class ResizeObservation(gym.wrappers.ResizeObservation):
    """gymnasium's ``ResizeObservation`` taking any sequence as ``shape`` (a YAML list cannot be a tuple)."""

    def __init__(self, env: gym.Env, shape: Sequence[int]) -> None:
        super().__init__(env, tuple(int(n) for n in shape))  # type: ignore[arg-type]
