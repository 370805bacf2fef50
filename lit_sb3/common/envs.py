"""Turning what a user hands us (env id, gymnasium env, factory, VecEnv) into a monitored VecEnv."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.preprocessing import (
    check_for_nested_spaces,
    is_image_space,
    is_image_space_channels_first,
)
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecMonitor, VecTransposeImage, is_vecenv_wrapped
from stable_baselines3.common.vec_env.base_vec_env import VecEnvWrapper

EnvSource = str | gym.Env | VecEnv | Callable[[], gym.Env]


def check_env_id(env_id: str) -> None:
    """Fail with the closest registered ids when gymnasium does not know ``env_id``."""
    if env_id in gym.envs.registry:
        return
    close = difflib.get_close_matches(env_id, list(gym.envs.registry), n=5, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else "; see gymnasium.envs.registry"
    raise ValueError(f"env: unknown environment id {env_id!r}{hint}")


def is_monitored(env: VecEnv) -> bool:
    """True when episode statistics reach ``infos`` (Monitor inside, or VecMonitor around)."""
    if is_vecenv_wrapped(env, VecMonitor):
        return True
    inner = env
    while isinstance(inner, VecEnvWrapper):
        inner = inner.venv
    return bool(all(inner.env_is_wrapped(Monitor)))


def _needs_transpose(space: spaces.Space) -> bool:
    if isinstance(space, spaces.Dict):
        return any(_needs_transpose(sub) for sub in space.spaces.values())
    return is_image_space(space) and not is_image_space_channels_first(space)  # type: ignore[arg-type]


def to_vec_env(
    source: EnvSource,
    n_envs: int = 1,
    *,
    seed: int | None = None,
    monitor_wrapper: bool = True,
    env_kwargs: dict[str, Any] | None = None,
    vec_env_cls: type[VecEnv] | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
) -> VecEnv:
    """Build the VecEnv an algorithm trains on.

    Env ids and factories give ``n_envs`` copies (each in a ``Monitor``); a gymnasium env instance becomes a one-env
    ``DummyVecEnv``; a VecEnv is kept, gaining a ``VecMonitor`` when nothing records episodes. Channel-last images
    are transposed as SB3 policies expect.
    """
    if n_envs < 1:
        raise ValueError(f"n_envs: must be >= 1, got {n_envs}")
    if isinstance(source, str):
        check_env_id(source)
    if isinstance(source, VecEnv):
        env = source
        if monitor_wrapper and not is_monitored(env):
            env = _with_vec_monitor(env)
    elif isinstance(source, gym.Env):
        if n_envs != 1:
            raise ValueError("n_envs: a gymnasium env instance is one env; pass an env id or a factory for n_envs > 1")
        inner = Monitor(source) if monitor_wrapper and not _has_monitor(source) else source
        env = DummyVecEnv([lambda: inner])
    elif isinstance(source, str) or callable(source):
        env = make_vec_env(
            source,
            n_envs=n_envs,
            seed=seed,
            env_kwargs=env_kwargs,
            vec_env_cls=vec_env_cls,  # type: ignore[arg-type]  # SB3 names its two classes; any VecEnv class works
            vec_env_kwargs=vec_env_kwargs,
            monitor_dir=None,
        )  # make_vec_env always adds a Monitor: episode statistics are part of every run
    else:
        raise TypeError(
            f"env: expected an env id string, a gymnasium.Env, a VecEnv or a callable returning a gymnasium.Env, "
            f"got {type(source).__name__}"
        )
    check_for_nested_spaces(env.observation_space)
    if not is_vecenv_wrapped(env, VecTransposeImage) and _needs_transpose(env.observation_space):
        env = VecTransposeImage(env)
    return env


def _with_vec_monitor(env: VecEnv) -> VecEnv:
    """``env`` recording episodes where that keeps the user's wrappers on top: a plain VecEnv gets a ``VecMonitor``
    around it. A chain of the user's wrappers (``VecNormalize(...)``) stays as it is, as in SB3: a ``VecMonitor``
    above it would record normalized rewards and break SB3's ``sync_envs_normalization`` (which walks the training
    and eval envs' wrappers in lockstep); one inside would change the user's env. Its episode statistics then need a
    ``Monitor`` in the user's envs (``make_vec_env`` adds one)."""
    if not isinstance(env, VecEnvWrapper):
        return VecMonitor(env)
    warnings.warn(
        f"env: no Monitor records the episodes of this {type(env).__name__}, so rollout/ep_rew_mean and ep_len_mean "
        f"stay empty (as in SB3); wrap its envs in Monitor (make_vec_env does) or put a VecMonitor under "
        f"{type(env).__name__}",
        stacklevel=3,
    )
    return env


def _has_monitor(env: gym.Env) -> bool:
    while True:
        if isinstance(env, Monitor):
            return True
        if not isinstance(env, gym.Wrapper):
            return False
        env = env.env


def env_spec_of(source: EnvSource | None) -> str | None:
    """The registered id behind ``source`` when one exists (what checkpoints may store instead of a live env)."""
    if source is None:
        return None
    if isinstance(source, str):
        return source
    if isinstance(source, VecEnv):
        try:
            specs = source.get_attr("spec")
        except (AttributeError, Exception):
            return None
        return specs[0].id if specs and specs[0] is not None else None
    spec = getattr(source, "spec", None)
    return spec.id if spec is not None else None


# --- spaces as plain data, so checkpoints load with torch.load(weights_only=True) -------------------------------


def space_to_dict(space: spaces.Space) -> dict[str, Any]:
    """Describe a gymnasium space with builtin types only."""
    dtype = str(space.dtype) if space.dtype is not None else None
    if isinstance(space, spaces.Box):
        return {"type": "Box", "low": space.low.tolist(), "high": space.high.tolist(), "dtype": dtype}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start), "dtype": dtype}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": space.nvec.tolist(), "dtype": dtype}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_to_dict(v) for k, v in space.spaces.items()}}
    raise TypeError(f"cannot describe space of type {type(space).__name__}")


def space_from_dict(data: dict[str, Any]) -> spaces.Space:
    """Inverse of :func:`space_to_dict`."""
    kind = data["type"]
    if kind == "Box":
        dtype = np.dtype(data["dtype"])
        return spaces.Box(np.array(data["low"], dtype=dtype), np.array(data["high"], dtype=dtype), dtype=dtype)
    if kind == "Discrete":
        return spaces.Discrete(data["n"], start=data["start"])
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(np.array(data["nvec"]), dtype=np.dtype(data["dtype"]))
    if kind == "MultiBinary":
        return spaces.MultiBinary(data["n"])
    if kind == "Dict":
        return spaces.Dict({k: space_from_dict(v) for k, v in data["spaces"].items()})
    raise ValueError(f"unknown space type {kind!r}")
