"""The memory one run needs, for a scheduler's request (``hydra/launcher=slurm``'s ``mem_gb``, ``regress --dry-run``).

An off-policy run's memory is its replay buffer: ``buffer_size`` transitions of observations (twice, as SB3 keeps
the next observations apart unless ``optimize_memory_usage``), actions, rewards and done flags, in the dtypes SB3
stores (the env's observation dtype: uint8 frames, float64 MuJoCo states). A checkpoint that keeps the buffer
(``checkpoint.replay_buffer``, the default) holds a copy of its filled part while it is written, and a resume holds
the loaded one while it fills the new buffer: twice the buffer at the peak. On top, ``PROCESS_GB`` for the
process itself (a DQN run on Atari with a 1,000-transition buffer peaks at 0.55 GB resident; the rest is headroom).
On-policy rollouts are a few MB and not counted.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from omegaconf import DictConfig, OmegaConf

from lit_bench.config.envs import make_envs

GIB = 2**30
PROCESS_GB = 2
_FLAGS_BYTES = 3 * 4  # rewards, dones, timeouts: float32 per transition


def _nbytes(space: spaces.Space[Any]) -> int:
    """Bytes of one element of ``space`` as SB3's replay buffer stores it."""
    if isinstance(space, spaces.Dict):
        return sum(_nbytes(sub) for sub in space.spaces.values())
    return int(np.prod(space.shape or ())) * np.dtype(space.dtype).itemsize


_SPACES: dict[str, tuple[spaces.Space[Any], spaces.Space[Any]]] = {}  # env config -> its spaces (one build each)


def _spaces(cfg: DictConfig) -> tuple[spaces.Space[Any], spaces.Space[Any]]:
    """The training env's observation and action spaces (as the algorithm sees them: wrapped, frames stacked)."""
    env_cfg = OmegaConf.create({**OmegaConf.to_container(cfg.env, resolve=True), "n_envs": 1})  # type: ignore[dict-item]
    key = OmegaConf.to_yaml(env_cfg)
    if key not in _SPACES:
        name = OmegaConf.select(cfg, "hydra.runtime.choices.env", default=None) or cfg.env.get("id")
        train, evaluation = make_envs(env_cfg, str(name), 0, None)
        _SPACES[key] = (train.observation_space, train.action_space)
        train.close()
        evaluation.close()
    return _SPACES[key]


def replay_buffer_bytes(cfg: DictConfig) -> int:
    """Bytes of the run's full replay buffer (0 for an algorithm without one)."""
    buffer_size = cfg.algo.get("buffer_size")
    if buffer_size is None:
        return 0
    obs, action = _spaces(cfg)
    observations = _nbytes(obs) * (1 if cfg.algo.get("optimize_memory_usage") else 2)
    # SB3 stores float64 actions as float32 (ReplayBuffer._maybe_cast_dtype)
    actions = _nbytes(action) // 2 if np.dtype(action.dtype) == np.float64 else _nbytes(action)
    return int(buffer_size) * (observations + actions + _FLAGS_BYTES)


def memory_gb(cfg: DictConfig) -> int:
    """GB the run needs at its peak (whole GB, rounded up): the process, plus its replay buffer once, or twice when
    checkpoints keep it."""
    copies = 2 if cfg.get("checkpoint", {}).get("replay_buffer", True) else 1
    return math.ceil(PROCESS_GB + copies * replay_buffer_bytes(cfg) / GIB)
