"""SB3's attribute surface of an algorithm: its env, its logger and its episode statistics, as SB3 names them.

What SB3 users and SB3 callbacks reach on a model (``model.env``, ``get_env`` / ``set_env``,
``get_vec_normalize_env``, ``model.logger`` / ``set_logger``, ``ep_info_buffer`` and ``dump_logs``), kept apart from
what Lightning needs of the module (:mod:`lit_sb3.common.base`).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.utils import check_for_correct_spaces, get_device
from stable_baselines3.common.vec_env import VecEnv, VecNormalize, unwrap_vec_normalize

from lit_sb3.common.envs import to_vec_env
from lit_sb3.common.sb3_bridge import record_rollout_stats
from lit_sb3.common.utils import CheckFailed
from lit_sb3.lightning_compat import attached_trainer

if TYPE_CHECKING:
    import lightning as L

    _Base = L.LightningModule  # the class after the mixins in BaseAlgorithm's bases (its logger is replaced here)
else:
    _Base = object


class SB3Surface(_Base):
    """SB3's env, logger and episode-statistics attributes of :class:`~lit_sb3.common.base.BaseAlgorithm` (a mixin
    placed before ``LightningModule``, whose ``logger`` it overrides)."""

    # SB3's attributes, set by BaseAlgorithm's constructor and ``build``
    observation_space: spaces.Space[Any] | None
    action_space: spaces.Space[Any] | None
    n_envs: int | None
    num_timesteps: int
    ep_info_buffer: deque[dict[str, Any]]
    ep_success_buffer: deque[bool]
    sb3_logger: Logger
    _env: VecEnv | None  # the env given to the constructor, load, set_env or learn
    _last_obs: Any
    _seeded_env: VecEnv | None  # the env that stands where _last_obs says (reset, or continued from a zip)
    _custom_logger: bool
    _num_timesteps_at_start: int
    _start_time: int

    # ------------------------------------------------------------------ device

    @property
    def device(self) -> torch.device:
        """Where the model's tensors are (Lightning's ``device``)."""
        return super().device

    @device.setter
    def device(self, device: torch.device | str) -> None:
        """SB3 lets users set ``model.device``; here that moves the model there (to the CPU when that device is
        unavailable, as SB3's ``get_device`` does): a Lightning module's device is where its tensors are."""
        self.to(get_device(device))

    # ------------------------------------------------------------------ env access

    def _fit_env(self) -> VecEnv | None:
        """The training env of the trainer's datamodule while a fit runs, else None."""
        trainer = attached_trainer(self)
        datamodule = getattr(trainer, "datamodule", None) if trainer is not None else None
        if datamodule is None or not hasattr(datamodule, "get_env"):
            return None
        env: VecEnv | None = datamodule.get_env("fit", resolve=False)
        return env

    @property
    def env(self) -> VecEnv | None:
        """SB3's ``env``: the env being trained on during a fit, else the one given to the constructor, ``load``,
        ``set_env`` or ``learn`` (None when there is none). Settable and deletable (``del model.env`` forgets it)."""
        return self._fit_env() or self._env

    @env.setter
    def env(self, env: VecEnv | None) -> None:
        self._env = env

    @env.deleter
    def env(self) -> None:
        self._env = None

    def get_env(self) -> VecEnv | None:
        """SB3-style: the env being trained on, else the one given to the constructor or ``learn``."""
        return self.env

    def set_env(self, env: GymEnv | str, force_reset: bool = True) -> None:
        """SB3's ``set_env``: train on ``env`` from now on (its spaces must match the model's).

        :param force_reset: reset ``env`` at the next ``learn`` (SB3's default); False continues from the last
            observation when the next ``learn`` keeps counting (``reset_num_timesteps=False``)
        """
        vec_env = to_vec_env(env)
        if self.observation_space is not None and self.action_space is not None:
            check_for_correct_spaces(vec_env, self.observation_space, self.action_space)
        if self.n_envs is not None and vec_env.num_envs != self.n_envs:  # a model that never had an env takes any
            name = type(self).__name__
            raise CheckFailed(  # SB3's words, then ours
                "The number of environments to be set is different from the number of environments in the model: "
                f"({vec_env.num_envs} != {self.n_envs}), whereas `set_env` requires them to be the same. To load a "
                f"model with a different number of environments, you must use `{name}.load(path, env)` instead. "
                f"env: learn(env=...) also trains on another number of envs"
            )
        self.n_envs = vec_env.num_envs
        self._env = vec_env
        if force_reset:
            self._last_obs = None
        else:
            self._seeded_env = vec_env

    def get_vec_normalize_env(self) -> VecNormalize | None:
        env = self.get_env()
        return unwrap_vec_normalize(env) if env is not None else None

    # ------------------------------------------------------------------ SB3's logger

    @property
    def logger(self) -> Any:
        """SB3's ``logger`` (``model.logger.record(...)``, what SB3 callbacks use); inside a fit, the attributes of a
        Lightning logger (``self.logger.experiment``, ``log_metrics``, ...) reach the trainer's logger."""
        return self.sb3_logger

    def set_logger(self, logger: Any) -> None:
        """SB3's ``set_logger``: record into this SB3 ``Logger`` from now on (``learn`` no longer replaces it)."""
        self.sb3_logger = logger
        self._custom_logger = True

    # ------------------------------------------------------------------ episode statistics and logging

    def _update_info_buffer(self, infos: list[dict[str, Any]], dones: np.ndarray | None = None) -> None:
        for idx, info in enumerate(infos):
            episode = info.get("episode")
            if episode is not None:
                self.ep_info_buffer.append(episode)
            success = info.get("is_success")
            if success is not None and (dones is None or dones[idx]):
                self.ep_success_buffer.append(success)

    def _record_rollout_stats(self) -> None:
        record_rollout_stats(
            self.sb3_logger,
            self.ep_info_buffer,
            self.ep_success_buffer,
            self.num_timesteps,
            self.num_timesteps - self._num_timesteps_at_start,
            self._start_time,
        )

    def dump_logs(self) -> None:
        """Write everything recorded since the last dump, at the current env step."""
        self._record_rollout_stats()
        self.sb3_logger.dump(step=self.num_timesteps)
