"""SB3's ``learn()`` on Lightning: an env-step budget becomes one :class:`RLTrainer` fit on an env datamodule."""

from __future__ import annotations

import os
import time
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch
from lightning.pytorch.loggers import CSVLogger, Logger, TensorBoardLogger
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import get_device, get_latest_run_id

from lit_sb3.common.envs import to_vec_env
from lit_sb3.common.sb3_bridge import as_callback
from lit_sb3.common.sb3_calls import accepts_sb3_learn_form
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.trainer import RLTrainer

if TYPE_CHECKING:
    from lit_sb3.common.base import BaseAlgorithm

Algorithm = TypeVar("Algorithm", bound="BaseAlgorithm")


def learn_method(tb_log_name: str, log_every_n_steps: int | None) -> Callable[..., Any]:
    """An algorithm's ``learn`` (SB3's signature, with the algorithm's defaults): ``learn = learn_method("SAC", 4)``
    in the class body; SB3's call form is accepted too (:func:`~lit_sb3.common.sb3_calls.accepts_sb3_learn_form`)."""
    default_tb_log_name, default_log_every_n_steps = tb_log_name, log_every_n_steps

    @accepts_sb3_learn_form
    def learn(
        self: BaseAlgorithm,
        total_timesteps: int,
        env: GymEnv | str | None = None,
        callback: MaybeCallback = None,
        log_every_n_steps: int | None = default_log_every_n_steps,
        tb_log_name: str = default_tb_log_name,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
        default_root_dir: str | Path | None = None,
    ) -> BaseAlgorithm:
        """Train for ``total_timesteps`` env steps (SB3's ``learn``), on an :class:`RLTrainer`.

        SB3's form ``learn(total_timesteps, callback, log_interval, ...)`` works too (``log_interval`` is SB3's name
        of ``log_every_n_steps``). With the constructor's (or ``load``'s) ``tensorboard_log``, TensorBoard events go
        to ``<tensorboard_log>/<tb_log_name>_<n>`` as with SB3: ``n`` one more than the highest run there, or the
        highest itself when ``reset_num_timesteps=False`` (the curve continues in the same run).

        :param total_timesteps: env steps to collect in this call
        :param env: env id, gymnasium env, factory or VecEnv; defaults to the one given to the constructor
        :param callback: SB3 callback(s), called at every env step
        :param log_every_n_steps: dump metrics every this many rollouts (on-policy) or episodes (off-policy);
            None: never (SB3's ``log_interval=None``)
        :param tb_log_name: run name of the loggers (empty: the class name)
        :param reset_num_timesteps: start counting env steps (and logged curves) from zero
        :param progress_bar: show a progress bar counting env steps
        :param default_root_dir: where CSV logs go; nothing is written when None
        """
        return fit_env_steps(
            self,
            total_timesteps,
            env,
            callback,
            log_every_n_steps,
            tb_log_name,
            reset_num_timesteps,
            progress_bar,
            default_root_dir,
        )

    return learn


def fit_env_steps(
    algo: Algorithm,
    total_timesteps: int,
    env: GymEnv | str | None,
    callback: MaybeCallback,
    log_every_n_steps: int | None,
    tb_log_name: str,
    reset_num_timesteps: bool,
    progress_bar: bool,
    default_root_dir: str | Path | None,
) -> Algorithm:
    """What every algorithm's ``learn`` does: one :class:`RLTrainer` fit of ``total_timesteps`` env steps."""
    if total_timesteps <= 0:
        raise ValueError(f"total_timesteps: must be > 0, got {total_timesteps}")
    if env is not None:
        vec_env = to_vec_env(env)
        if vec_env is not algo._env:
            algo._last_obs = None
        algo._env = vec_env
    if algo._env is None:
        name = type(algo).__name__
        raise ValueError(f"env: {name}.learn needs an env (learn(env=...) or the constructor's env=)")
    if reset_num_timesteps:
        algo.num_timesteps = 0
        algo._episode_num = 0
        algo._last_obs = None
        algo._pending_resume = None  # a fresh start: no env replay or RNG restore from a loaded checkpoint
        algo._learn_logger = None
    algo.log_interval = log_every_n_steps
    name = tb_log_name or type(algo).__name__
    if default_root_dir is not None and algo._learn_logger is None:
        algo._learn_logger = CSVLogger(save_dir=str(default_root_dir), name=name)
    loggers: list[Logger] = [algo._learn_logger] if default_root_dir is not None else []
    if algo.tensorboard_log is not None and not algo._custom_logger:
        loggers.append(_tensorboard_logger(algo.tensorboard_log, name, reset_num_timesteps))
    if not algo._custom_logger:  # SB3's logger.dir: this run's log folder (SB3_LOGDIR when it writes none)
        algo.sb3_logger.dir = loggers[-1].log_dir if loggers else os.environ.get("SB3_LOGDIR")
    trainer = RLTrainer(
        max_steps=algo.num_timesteps + total_timesteps,
        rl_callback=callback,
        run_name=name,
        logger=loggers or False,
        default_root_dir=default_root_dir,
        enable_progress_bar=progress_bar,
        **_accelerator_for(algo.requested_device),
    )
    trainer.fit(algo, datamodule=RLEnvDataModule(train_env=algo._env))
    return algo


def setup_learn(
    algo: BaseAlgorithm, total_timesteps: int, callback: MaybeCallback, reset_num_timesteps: bool
) -> tuple[int, BaseCallback]:
    """SB3's ``_setup_learn``, for a training loop driven by hand (``collect_rollouts`` / ``train`` outside
    ``learn``): the counters, the env's first observation, the buffers and the callback; returns the run's total
    env steps and the callback."""
    env = algo.get_env()
    if env is None:
        raise ValueError(f"env: {type(algo).__name__}._setup_learn needs an env (the constructor's, set_env, load)")
    if reset_num_timesteps:
        algo.num_timesteps, algo._episode_num = 0, 0
    if reset_num_timesteps or algo._last_obs is None:
        algo._last_obs = env.reset()
        algo._last_episode_starts = np.ones((env.num_envs,), dtype=bool)
    algo._total_timesteps = total_timesteps + (0 if reset_num_timesteps else algo.num_timesteps)
    algo._start_time, algo._num_timesteps_at_start = time.time_ns(), algo.num_timesteps
    algo.n_envs = env.num_envs
    algo._setup_buffers(env)
    run_callback = as_callback(callback) or CallbackList([])
    run_callback.init_callback(algo)  # type: ignore[arg-type]
    return algo._total_timesteps, run_callback


class SB3TensorBoardLogger(TensorBoardLogger):
    """Lightning's TensorBoard logger writing SB3's run directory: the metrics' event files only (SB3 writes no
    hyperparameters there, so neither ``hparams.yaml`` nor TensorBoard's hparams entries)."""

    def log_hyperparams(
        self, params: dict[str, Any] | Namespace, metrics: dict[str, Any] | None = None, step: int | None = None
    ) -> None:
        pass

    def save(self) -> None:
        self.experiment.flush()


def _tensorboard_logger(root: str, name: str, reset_num_timesteps: bool) -> TensorBoardLogger:
    """A TensorBoard logger writing where SB3's ``learn`` would: ``<root>/<name>_<n>``."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise ImportError(
            "tensorboard_log: writing TensorBoard events needs the tensorboard package (pip install tensorboard)"
        ) from None
    run_id = get_latest_run_id(root, name) + (1 if reset_num_timesteps else 0)
    return SB3TensorBoardLogger(save_dir=root, name="", version=f"{name}_{run_id}", default_hp_metric=False)


def _accelerator_for(device: torch.device | str) -> dict[str, Any]:
    """Trainer placement for an SB3 ``device`` argument ("auto" keeps the RL default, the CPU; "cuda" on a machine
    without CUDA falls back to the CPU, as in SB3)."""
    resolved = None if isinstance(device, str) and device == "auto" else get_device(device)
    if resolved is None or resolved.type == "cpu":
        return {"accelerator": "cpu"}
    return {"accelerator": "gpu" if resolved.type == "cuda" else resolved.type, "devices": [resolved.index or 0]}
