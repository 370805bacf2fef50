"""The envs of a seed group: one VecEnv per seed, stepped together as one VecEnv of N x n_envs envs.

Each seed's VecEnv is what a single run of that seed builds (``make_vec_env``, a ``Monitor`` per env, seeded
``seed + j`` at the first reset), so a seed's episodes are the single run's for the same actions. For the
classic-control ids of ``lit_sb3.seeds.classic_envs`` (CartPole-v1, Acrobot-v1, MountainCar-v0) every seed's envs
are one bank of numpy arrays that returns ``make_vec_env``'s results bit for bit and steps all N x n_envs envs in
one call (``step_async`` of every seed, then ``step_wait``). gymnasium's own ``CartPoleVectorEnv`` is not used: its
one random generator for all envs and its autoreset differ from SB3's per-env seeding and resets, so a seed's
episodes would no longer be its single run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from lit_sb3.common.envs import EnvSource, to_vec_env
from lit_sb3.seeds.classic_envs import classic_vec_envs, is_classic


def seed_envs(env: EnvSource | Sequence[VecEnv], n_seeds: int, n_envs: int) -> list[VecEnv]:
    """One monitored VecEnv per seed: ``n_envs`` copies of an env id or factory each, or the given VecEnvs."""
    if isinstance(env, (list, tuple)):
        if len(env) != n_seeds:
            raise ValueError(f"env: one VecEnv per seed, got {len(env)} for {n_seeds} seeds")
        if len({id(e) for e in env}) != len(env):
            raise ValueError("env: each seed needs a VecEnv of its own (the same VecEnv was given twice)")
        return [to_vec_env(e) for e in env]
    if isinstance(env, str) and is_classic(env):
        if n_envs < 1:
            raise ValueError(f"n_envs: must be >= 1, got {n_envs}")
        return list(classic_vec_envs(env, n_envs, n_seeds))  # make_vec_env's envs, every seed's in one bank
    if isinstance(env, str) or (callable(env) and not isinstance(env, VecEnv)):
        return [to_vec_env(env, n_envs) for _ in range(n_seeds)]
    raise ValueError(
        f"env: a seed group takes an env id or factory (with n_envs), or a list of one VecEnv per seed; "
        f"got {type(env).__name__}"
    )


class GroupVecEnv(VecEnv):
    """The seeds' VecEnvs as one: env ``i * n_envs + j`` is seed i's env j. ``step_async`` sends each seed its slice
    of the actions (a ``SubprocVecEnv`` of a seed steps while the next seed's is sent); ``step_wait`` concatenates."""

    def __init__(self, envs: Sequence[VecEnv]) -> None:
        first = envs[0]
        for env in envs[1:]:
            if env.num_envs != first.num_envs:
                raise ValueError(
                    f"env: every seed needs the same number of envs, got {env.num_envs} and {first.num_envs}"
                )
            if env.observation_space != first.observation_space or env.action_space != first.action_space:
                raise ValueError("env: every seed's VecEnv needs the same observation and action spaces")
        if isinstance(first.observation_space, spaces.Dict):
            raise ValueError("env: seed groups support Box and Discrete observations (MlpPolicy), not Dict")
        self.envs = list(envs)
        self.envs_per_seed = first.num_envs
        super().__init__(len(envs) * first.num_envs, first.observation_space, first.action_space)

    def per_seed(self, values: np.ndarray) -> list[np.ndarray]:
        """``[N * n_envs, ...]`` -> N arrays of ``[n_envs, ...]``."""
        return list(values.reshape(len(self.envs), self.envs_per_seed, *values.shape[1:]))

    def reset(self) -> VecEnvObs:
        observations = [env.reset() for env in self.envs]
        self.reset_infos = [info for env in self.envs for info in env.reset_infos]
        return np.concatenate(observations)  # type: ignore[arg-type]

    def step_async(self, actions: np.ndarray) -> None:
        for env, seed_actions in zip(self.envs, self.per_seed(actions)):
            env.step_async(seed_actions)

    def step_wait(self) -> VecEnvStepReturn:
        results = [env.step_wait() for env in self.envs]
        obs = np.concatenate([r[0] for r in results])
        rewards = np.concatenate([r[1] for r in results])
        dones = np.concatenate([r[2] for r in results])
        infos = [info for r in results for info in r[3]]
        return obs, rewards, dones, infos

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        raise ValueError("seed: a seed group seeds each seed's VecEnv itself (seed_each)")

    def seed_each(self, seeds: Sequence[int]) -> None:
        """Seed i's VecEnv with ``seeds[i]`` (its sub-envs get ``seeds[i] + j``, as SB3 seeds a VecEnv)."""
        for env, seed in zip(self.envs, seeds):
            env.seed(seed)

    def _split(self, indices: VecEnvIndices) -> list[tuple[VecEnv, list[int]]]:
        wanted = self._get_indices(indices)
        parts: list[tuple[VecEnv, list[int]]] = []
        for i, env in enumerate(self.envs):
            local = [
                k - i * self.envs_per_seed for k in wanted if i * self.envs_per_seed <= k < (i + 1) * self.envs_per_seed
            ]
            if local:
                parts.append((env, local))
        return parts

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [value for env, local in self._split(indices) for value in env.get_attr(attr_name, local)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for env, local in self._split(indices):
            env.set_attr(attr_name, value, local)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        return [
            value
            for env, local in self._split(indices)
            for value in env.env_method(method_name, *method_args, indices=local, **method_kwargs)
        ]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [value for env, local in self._split(indices) for value in env.env_is_wrapped(wrapper_class, local)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [image for env in self.envs for image in env.get_images()]
