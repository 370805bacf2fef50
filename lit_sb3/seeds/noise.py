"""TD3's (and SAC's, when given) exploration noise for a seed group: SB3's action noise per seed and env, drawn from
each seed's ``RandomState`` (its process's ``np.random``, which SB3's noise objects draw from) with SB3's calls."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from stable_baselines3.common.noise import (
    ActionNoise,
    NormalActionNoise,
    OrnsteinUhlenbeckActionNoise,
    VectorizedActionNoise,
)


class SeedActionNoise:
    """SB3's ``NormalActionNoise`` or ``OrnsteinUhlenbeckActionNoise`` (its mean, sigma, theta, dt, initial noise),
    one process per seed and env: :meth:`draw` gives ``[N, n_envs, A]``, seed i's from ``rngs[i]``.

    :param noise: the noise the single-run model would be given
    :param n_seeds: seeds of the group
    :param n_envs: envs per seed
    """

    def __init__(self, noise: ActionNoise, n_seeds: int, n_envs: int) -> None:
        if isinstance(noise, VectorizedActionNoise):  # a multi-env model wraps its noise: one copy per env
            noise = noise.base_noise
        if not isinstance(noise, (NormalActionNoise, OrnsteinUhlenbeckActionNoise)):
            raise ValueError(
                f"action_noise: seed groups batch NormalActionNoise and OrnsteinUhlenbeckActionNoise, "
                f"not {type(noise).__name__}"
            )
        self.mean = np.asarray(noise._mu)
        self.sigma = np.asarray(noise._sigma)
        self.dtype = getattr(noise, "_dtype", np.float32)  # (SB3's attribute; Lightning has a private of that name)
        self.ornstein_uhlenbeck = isinstance(noise, OrnsteinUhlenbeckActionNoise)
        self.theta = float(getattr(noise, "_theta", 0.0))
        self.dt = float(getattr(noise, "_dt", 0.0))
        initial = getattr(noise, "initial_noise", None)
        self.initial = np.zeros_like(self.mean) if initial is None else np.asarray(initial)
        self.previous = np.broadcast_to(self.initial, (n_seeds, n_envs, *self.mean.shape)).copy()

    def draw(self, rngs: list[np.random.RandomState]) -> np.ndarray:
        """One draw per seed and env, seed i's from ``rngs[i]``: each env's in turn, as SB3's
        ``VectorizedActionNoise`` calls its envs' noises (one ``np.random.normal`` call each)."""
        n_envs = self.previous.shape[1]
        if not self.ornstein_uhlenbeck:
            return np.stack(
                [[rng.normal(self.mean, self.sigma).astype(self.dtype) for _ in range(n_envs)] for rng in rngs]
            )
        shocks = np.stack([[rng.normal(size=self.mean.shape) for _ in range(n_envs)] for rng in rngs])
        self.previous = (
            self.previous + self.theta * (self.mean - self.previous) * self.dt + self.sigma * np.sqrt(self.dt) * shocks
        )
        return self.previous.astype(self.dtype)

    def reset(self, dones: np.ndarray) -> None:
        """Restart the processes of the envs whose episode ended (``dones``: ``[N, n_envs]``)."""
        self.previous[dones] = self.initial

    def seed_state(self, seed_index: int) -> dict[str, Any]:
        return {"previous": torch.from_numpy(self.previous[seed_index].copy())}

    def load_seed_state(self, seed_index: int, state: dict[str, Any]) -> None:
        self.previous[seed_index] = state["previous"].numpy()
