"""The replay buffer of the off-policy algorithms: which SB3 buffer to build, HER's env hook-up, what a step stores,
and persistence.

SB3's buffers are used as they are; this module decides between them, keeps HER pointed at the training env, and
turns a buffer into tensors and plain numbers (safe for ``weights_only`` checkpoint loading) and back.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import DictReplayBuffer, NStepReplayBuffer, ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.save_util import load_from_pkl, save_to_pkl
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from stable_baselines3.her.her_replay_buffer import HerReplayBuffer

from lit_sb3.common import resume
from lit_sb3.common.allow_list import is_trusted
from lit_sb3.common.her import GOAL_KEYS
from lit_sb3.common.safe_load import loads
from lit_sb3.common.utils import CheckFailed


def uses_her(buffer_class: type[ReplayBuffer] | None) -> bool:
    return buffer_class is not None and issubclass(buffer_class, HerReplayBuffer)


def check_buffer_class(buffer_class: Any) -> None:
    """Refuse a ``replay_buffer_class`` that is not a ReplayBuffer subclass (None chooses one)."""
    if buffer_class is not None and not (isinstance(buffer_class, type) and issubclass(buffer_class, ReplayBuffer)):
        raise ValueError(
            f"replay_buffer_class: expected None or a ReplayBuffer subclass (ReplayBuffer, DictReplayBuffer, "
            f"NStepReplayBuffer, HerReplayBuffer), got {buffer_class!r}"
        )


def check_replay_args(
    buffer_class: type[ReplayBuffer] | None, observation_space: spaces.Space, n_steps: int, optimize_memory_usage: bool
) -> None:
    """Refuse, before anything is built, a buffer choice the env's observation space or ``n_steps`` cannot use."""
    if uses_her(buffer_class):
        keys = set(observation_space.spaces) if isinstance(observation_space, spaces.Dict) else set()
        if not set(GOAL_KEYS) <= keys:
            raise ValueError(
                f"replay_buffer_class: HerReplayBuffer needs a goal-conditioned env (Dict observation with keys "
                f"{', '.join(GOAL_KEYS)} and compute_reward), got observation space {observation_space}"
            )
        if optimize_memory_usage:
            raise ValueError("optimize_memory_usage: must be False with HerReplayBuffer")
    if isinstance(observation_space, spaces.Dict) and n_steps > 1 and buffer_class is None:
        raise CheckFailed(  # SB3's words, then ours
            "N-step returns are not supported for Dict observation spaces yet. "
            f"n_steps: n-step returns need a non-Dict observation space; use 1, got {n_steps}"
        )
    if n_steps > 1 and optimize_memory_usage:
        raise ValueError("optimize_memory_usage: must be False when n_steps > 1 (NStepReplayBuffer)")


def make_replay_buffer(
    buffer_class: type[ReplayBuffer] | None,
    buffer_kwargs: dict[str, Any],
    buffer_size: int,
    observation_space: spaces.Space,
    action_space: spaces.Space,
    env: VecEnv,
    device: torch.device | str,
    optimize_memory_usage: bool,
    n_steps: int,
    gamma: float,
) -> ReplayBuffer:
    """``buffer_class`` (None: Dict, n-step or plain buffer, chosen from the observation space and ``n_steps``)."""
    kwargs = dict(buffer_kwargs)
    if buffer_class is None:
        if isinstance(observation_space, spaces.Dict):
            buffer_class = DictReplayBuffer
        elif n_steps > 1:
            buffer_class, kwargs = NStepReplayBuffer, {**kwargs, "n_steps": n_steps, "gamma": gamma}
        else:
            buffer_class = ReplayBuffer
    elif n_steps > 1:
        warnings.warn(  # SB3's words
            f"`n_steps={n_steps}` is ignored because a custom `replay_buffer_class` (`{buffer_class.__name__}`) was "
            "passed: n-step returns are only set up automatically when `replay_buffer_class` is `None`. To use "
            "n-step returns with a custom replay buffer, configure it explicitly, e.g. "
            f'`replay_buffer_kwargs={{"n_steps": {n_steps}, "gamma": {gamma}}}`.',
            stacklevel=3,
        )
    if issubclass(buffer_class, HerReplayBuffer):
        kwargs["env"] = env
    return buffer_class(
        buffer_size,
        observation_space,
        action_space,
        device=device,
        n_envs=env.num_envs,
        optimize_memory_usage=optimize_memory_usage,
        **kwargs,
    )


def attach_env(buffer: ReplayBuffer, env: VecEnv) -> None:
    """Point a HER buffer at ``env`` (its ``compute_reward`` relabels the samples); other buffers hold no env."""
    if isinstance(buffer, HerReplayBuffer) and buffer.env is not env:
        buffer.env = None  # set_env refuses to replace an env
        buffer.set_env(env)


def truncate_last_trajectory(buffer: ReplayBuffer | None, optimize_memory_usage: bool) -> None:
    """The env was reset: the buffer's last transition must not be chained to the next one."""
    if buffer is None or not (buffer.full or buffer.pos > 0):
        return
    if isinstance(buffer, HerReplayBuffer):
        if np.any(buffer._current_ep_start != buffer.pos):
            buffer.truncate_last_trajectory()
    elif optimize_memory_usage:
        warnings.warn(  # SB3's words, then ours
            "The last trajectory in the replay buffer will be truncated, see "
            "https://github.com/DLR-RM/stable-baselines3/issues/46."
            "You should use `reset_num_timesteps=False` or `optimize_memory_usage=False`to avoid that issue. "
            "optimize_memory_usage: the env was reset, so the last transition is marked done",
            stacklevel=3,
        )
        buffer.dones[(buffer.pos - 1) % buffer.buffer_size] = True


Obs = np.ndarray | dict[str, np.ndarray]


def box_actions(
    policy: BasePolicy, actions: np.ndarray, from_policy: bool, noise: ActionNoise | None
) -> tuple[np.ndarray, np.ndarray]:
    """(env actions, actions to store) of Box ``actions`` (random ones, or the policy's): stored scaled to [-1, 1]
    with ``noise`` added there, as SB3 stores them.

    The policy's go through SB3's predict -> scale_action round trip, even squashed ones already in [-1, 1]:
    skipping it changes the stored actions in the last bit, and a whole run then drifts away from SB3's.
    """
    unscaled = actions
    if from_policy:
        space = cast(spaces.Box, policy.action_space)  # only Box actions come here
        unscaled = policy.unscale_action(actions) if policy.squash_output else np.clip(actions, space.low, space.high)
    scaled = policy.scale_action(unscaled)
    if noise is not None:
        scaled = np.clip(scaled + noise(), -1.0, 1.0)
    return policy.unscale_action(scaled), scaled


def store_transition(
    buffer: ReplayBuffer,
    original_obs: Obs,
    new_obs: Obs,
    buffer_action: np.ndarray,
    reward: np.ndarray,
    dones: np.ndarray,
    infos: list[dict[str, Any]],
    vec_normalize: VecNormalize | None,
) -> Obs:
    """Add one vector step to ``buffer`` as SB3 stores it; returns the unnormalized ``new_obs`` (the next step's
    ``original_obs``).

    The buffer keeps unnormalized observations and rewards (the env's VecNormalize statistics keep moving), and an
    episode's true last observation as the next observation of its last transition (the VecEnv has already reset).
    """
    if vec_normalize is not None:
        new_original_obs, reward = vec_normalize.get_original_obs(), vec_normalize.get_original_reward()
    else:
        new_original_obs = new_obs
    next_obs = _copy_obs(new_original_obs)
    for i in np.flatnonzero(dones):
        terminal = infos[i].get("terminal_observation")
        if terminal is None:
            continue
        if vec_normalize is not None:
            terminal = vec_normalize.unnormalize_obs(terminal)
        if isinstance(next_obs, dict):
            for key in next_obs:
                next_obs[key][i] = terminal[key]
        else:
            next_obs[i] = terminal
    # a DictReplayBuffer (typed as SB3's ReplayBuffer here) takes the dict observations
    buffer.add(original_obs, next_obs, buffer_action, reward, dones, infos)  # type: ignore[arg-type]
    return new_original_obs


def _copy_obs(obs: Obs) -> Obs:
    """A copy the env's next step cannot overwrite (VecEnvs reuse their observation arrays)."""
    if isinstance(obs, dict):
        return {k: np.array(v, copy=True) for k, v in obs.items()}
    return np.array(obs, copy=True)


def save_replay_buffer(buffer: ReplayBuffer | None, path: str | Path, verbose: int = 0) -> None:
    """Pickle ``buffer`` (SB3's format; HER's env is left out)."""
    if buffer is None:
        raise RuntimeError("save_replay_buffer: there is no replay buffer yet (train first)")
    save_to_pkl(path, buffer, verbose)


def _read_buffer(path: str | Path | io.BufferedIOBase, trusted: bool | None, verbose: int) -> Any:
    """The pickled buffer at ``path`` (or ``path.pkl``, as SB3 names it; or an open binary file, as SB3 takes too),
    read through lit_sb3's allow-list unless ``trusted`` (or, when not given, ``LIT_SB3_TRUST=1`` /
    ``lit_sb3.safe_load.trusted()``)."""
    if trusted if trusted is not None else is_trusted():
        return load_from_pkl(path, verbose)
    if isinstance(path, io.BufferedIOBase):
        return loads(path.read(), f"load_replay_buffer: {getattr(path, 'name', 'the file')}", trusted=_TRUST_HINT)
    if not Path(path).is_file() and Path(f"{path}.pkl").is_file():
        path = f"{path}.pkl"
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise FileNotFoundError(f"load_replay_buffer: cannot read {path} ({error.strerror})") from None
    return loads(data, f"load_replay_buffer: {path}", trusted=_TRUST_HINT)


_TRUST_HINT = "load_replay_buffer(..., trusted=True)"


def load_replay_buffer(
    path: str | Path | io.BufferedIOBase,
    env: VecEnv | None,
    device: torch.device,
    truncate_last_traj: bool = True,
    verbose: int = 0,
    trusted: bool | None = None,
) -> ReplayBuffer:
    """A buffer written by :func:`save_replay_buffer` (or SB3's), on ``device``; a HER buffer gets ``env``. The
    pickle may name only allow-listed classes (:mod:`lit_sb3.safe_load`) unless ``trusted``."""
    buffer = _read_buffer(path, trusted, verbose)
    if not isinstance(buffer, ReplayBuffer):
        raise ValueError(f"load_replay_buffer: {path} holds a {type(buffer).__name__}, not a ReplayBuffer")
    if not hasattr(buffer, "handle_timeout_termination"):  # written by an old SB3
        buffer.handle_timeout_termination = False
        buffer.timeouts = np.zeros_like(buffer.dones)
    if isinstance(buffer, HerReplayBuffer):
        if env is None:
            raise ValueError("load_replay_buffer: a HerReplayBuffer needs an env; pass env= to the model first")
        buffer.env = None
        buffer.set_env(env)
        if truncate_last_traj:
            buffer.truncate_last_trajectory()
    buffer.device = device
    return buffer


def buffer_arrays(buffer: ReplayBuffer) -> dict[str, Any]:
    """The buffer's filled part as tensors and plain numbers (safe for ``weights_only`` checkpoint loading).

    Arrays over the buffer's slots keep only the slots written so far (one more with ``optimize_memory_usage``, where
    the next observation of the last transition sits in the next slot); HER's per-transition info dicts are kept
    only when it copies them (``copy_info_dict``), otherwise they are all empty.
    """
    filled = buffer.buffer_size if buffer.full else min(buffer.pos + 1, buffer.buffer_size)
    state: dict[str, Any] = {"filled": filled}

    def part(array: np.ndarray) -> Any:
        return resume.to_tree(array[:filled] if array.shape[:1] == (buffer.buffer_size,) else array)

    for key, value in vars(buffer).items():
        if key == "infos" and not getattr(buffer, "copy_info_dict", True):
            continue
        if isinstance(value, np.ndarray):
            state[key] = part(value)
        elif isinstance(value, dict) and value and all(isinstance(v, np.ndarray) for v in value.values()):
            state[key] = {k: part(v) for k, v in value.items()}
        elif isinstance(value, (bool, int, float)) and key not in ("buffer_size", "n_envs"):
            state[key] = value
    return state


def restore_buffer_arrays(buffer: ReplayBuffer, state: dict[str, Any]) -> None:
    """Write a :func:`buffer_arrays` state into a freshly built buffer of the same size."""

    def put(target: np.ndarray | None, saved: Any) -> np.ndarray:
        saved = resume.from_tree(saved)
        if target is None or target.shape[1:] != saved.shape[1:] or len(saved) > len(target):
            return saved
        target[: len(saved)] = saved
        return target

    for key, value in state.items():
        if key == "filled":
            continue
        if isinstance(value, dict) and "__object_array__" not in value:
            current = getattr(buffer, key)
            setattr(buffer, key, {k: put(current.get(k), v) for k, v in value.items()})
        elif isinstance(value, (torch.Tensor, dict)):
            setattr(buffer, key, put(getattr(buffer, key, None), value))
        else:
            setattr(buffer, key, value)
