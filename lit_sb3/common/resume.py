"""Exact resume: the training state a checkpoint keeps besides parameters and optimizers.

Everything is stored as tensors, plain numbers, strings, lists and dicts, so checkpoints load with
``torch.load(weights_only=True)``.

The envs are brought back by **replay**, not by pickling them: the algorithm records the seeds of the reset that
started training and every action it sent to the training VecEnv since; on resume a fresh VecEnv is reset with the
same seeds and stepped through the same actions, which puts every sub-env (physics state, its RNG, time limits,
``Monitor`` episode counters) exactly where it was. That works for any seeded gymnasium env without unpickling
anything; it costs one env step per recorded step at resume time (no policy forward passes) and the action log's
size in the checkpoint. ``VecNormalize`` statistics are copied, not replayed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.noise import ActionNoise, VectorizedActionNoise
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize

# ---------------------------------------------------------------------------------------------- tensor trees


def to_tree(value: Any) -> Any:
    """numpy arrays/scalars -> tensors/Python numbers, recursively through dicts, lists and tuples."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"__object_array__": [to_tree(v) for v in value.reshape(-1)], "shape": list(value.shape)}
        return torch.from_numpy(value.copy())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: to_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_tree(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    raise TypeError(f"checkpoint: cannot store a {type(value).__name__} safely (tensors, numbers, str, list, dict)")


def from_tree(value: Any) -> Any:
    """Inverse of :func:`to_tree` (tensors -> numpy arrays)."""
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        if "__object_array__" in value:
            items = [from_tree(v) for v in value["__object_array__"]]
            array = np.empty(len(items), dtype=object)
            array[:] = items
            return array.reshape(value["shape"])
        return {k: from_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_tree(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------- RNGs


def rng_state() -> dict[str, Any]:
    """torch (CPU and CUDA), numpy's global and Python's ``random`` generator states."""
    legacy = np.random.get_state(legacy=True)
    if isinstance(legacy, dict):  # numpy gives a dict only when the global generator is not MT19937
        raise RuntimeError(f"resume: numpy's global generator is not MT19937 ({legacy.get('bit_generator')})")
    kind, keys, pos, has_gauss, cached = legacy
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "python": random.getstate(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np_state = state["numpy"]
    np.random.set_state(
        (
            np_state["kind"],
            np_state["keys"].numpy().astype(np.uint32),
            np_state["pos"],
            np_state["has_gauss"],
            np_state["cached_gaussian"],
        )
    )
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def space_rng_state(space: spaces.Space) -> Mapping[str, Any]:
    return space.np_random.bit_generator.state


def set_space_rng_state(space: spaces.Space, state: dict[str, Any]) -> None:
    space.np_random.bit_generator.state = state


# ---------------------------------------------------------------------------------------------- action noise


def noise_state(noise: ActionNoise | None) -> Any:
    """The arrays an action noise carries between calls (Ornstein-Uhlenbeck's previous value, ...)."""
    if noise is None:
        return None
    if isinstance(noise, VectorizedActionNoise):
        return [noise_state(n) for n in noise.noises]
    return {k: to_tree(v) for k, v in vars(noise).items() if isinstance(v, np.ndarray)}


def set_noise_state(noise: ActionNoise | None, state: Any) -> None:
    if noise is None or state is None:
        return
    if isinstance(noise, VectorizedActionNoise):
        for n, s in zip(noise.noises, state):
            set_noise_state(n, s)
        return
    for key, value in state.items():
        setattr(noise, key, from_tree(value))


# ---------------------------------------------------------------------------------------------- envs


def base_vec_env(env: VecEnv) -> VecEnv:
    """The innermost VecEnv (below VecNormalize and other VecEnv wrappers)."""
    while isinstance(env, VecEnvWrapper):
        env = env.venv
    return env


class ActionLog:
    """The seeds of the reset that started training and every action sent to the VecEnv since (growing array)."""

    def __init__(self, seeds: list[int | None], options: list[dict[str, Any]]) -> None:
        self.seeds = list(seeds)
        self.options = [dict(o) for o in options]
        self._actions: np.ndarray | None = None
        self.size = 0
        self.resets: list[int] = []  # later resets of the whole VecEnv (ARS), as the number of actions before each

    @classmethod
    def before_reset(cls, env: VecEnv) -> ActionLog:
        base = base_vec_env(env)
        n = base.num_envs
        return cls(list(getattr(base, "_seeds", [None] * n)), list(getattr(base, "_options", [{}] * n)))

    def append(self, actions: np.ndarray) -> None:
        actions = np.asarray(actions)
        if self._actions is None:
            self._actions = np.empty((1024, *actions.shape), dtype=actions.dtype)
        elif self.size == len(self._actions):
            self._actions = np.concatenate([self._actions, np.empty_like(self._actions)])
        self._actions[self.size] = actions
        self.size += 1

    @property
    def actions(self) -> np.ndarray | None:
        return None if self._actions is None else self._actions[: self.size]

    def state(self) -> dict[str, Any]:
        actions = self.actions
        return {
            "seeds": self.seeds,
            "options": to_tree(self.options),
            "resets": list(self.resets),
            "actions": None if actions is None else torch.from_numpy(actions.copy()),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ActionLog:
        log = cls(state["seeds"], from_tree(state["options"]))
        log.resets = list(state.get("resets", []))
        if state["actions"] is not None:
            actions = state["actions"].numpy()
            log._actions, log.size = actions.copy(), len(actions)
        return log

    def replay(self, env: VecEnv) -> None:
        """Reset ``env``'s innermost VecEnv with the recorded seeds and step it through the recorded actions."""
        base = base_vec_env(env)
        if any(seed is None for seed in self.seeds):
            raise ValueError(
                "resume: the envs were reset without seeds, so they cannot be replayed exactly; "
                "give the algorithm a seed"
            )
        base._seeds, base._options = list(self.seeds), [dict(o) for o in self.options]
        base.reset()
        actions, resets = self.actions, sorted(self.resets)
        for step, action in enumerate(actions if actions is not None else ()):
            while resets and resets[0] == step:
                base.reset()
                resets.pop(0)
            base.step(action)
        for _ in resets:
            base.reset()


def _rms_state(rms: RunningMeanStd | dict[str, RunningMeanStd]) -> Any:
    if isinstance(rms, dict):
        return {k: _rms_state(v) for k, v in rms.items()}
    return {"mean": to_tree(np.asarray(rms.mean)), "var": to_tree(np.asarray(rms.var)), "count": float(rms.count)}


def _set_rms(rms: RunningMeanStd | dict[str, RunningMeanStd], state: Any) -> None:
    if isinstance(rms, dict):
        for k, v in rms.items():
            _set_rms(v, state[k])
        return
    rms.mean, rms.var, rms.count = state["mean"].numpy().copy(), state["var"].numpy().copy(), state["count"]


def vecnormalize_state(env: VecEnv | None) -> dict[str, Any] | None:
    """Running statistics and the per-env return accumulators of every VecNormalize in the wrapper chain."""
    states = []
    while isinstance(env, VecEnvWrapper):
        if isinstance(env, VecNormalize):
            # SB3 keeps observation statistics only with norm_obs (read from the layer itself: the attribute
            # lookup of a VecEnvWrapper would fall through to the envs it wraps)
            obs_rms = vars(env).get("obs_rms")
            states.append(
                {
                    "obs_rms": None if obs_rms is None else _rms_state(obs_rms),
                    "ret_rms": _rms_state(env.ret_rms),
                    "returns": to_tree(env.returns),
                    "old_obs": to_tree(env.old_obs),
                    "old_reward": to_tree(env.old_reward),
                }
            )
        env = env.venv
    return {"layers": states} if states else None


def set_vecnormalize_state(env: VecEnv, state: dict[str, Any] | None) -> None:
    if state is None:
        return
    layers = iter(state["layers"])
    while isinstance(env, VecEnvWrapper):
        if isinstance(env, VecNormalize):
            layer = next(layers)
            if layer["obs_rms"] is not None:
                _set_rms(env.obs_rms, layer["obs_rms"])
            _set_rms(env.ret_rms, layer["ret_rms"])
            for key in ("returns", "old_obs", "old_reward"):
                setattr(env, key, from_tree(layer[key]))
        env = env.venv
