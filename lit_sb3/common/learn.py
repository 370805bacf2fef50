"""SB3's ``learn()`` on Lightning: the one ``learn`` every algorithm declares with its defaults (:func:`learn_method`),
and the loggers it makes; the fit itself is ``BaseAlgorithm._fit_env_steps``."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import torch
from lightning.pytorch.loggers import TensorBoardLogger
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import get_device, get_latest_run_id

from lit_sb3.common.sb3_calls import accepts_sb3_learn_form

Learner = TypeVar("Learner", bound="FitsEnvSteps")


class FitsEnvSteps(Protocol):
    """What ``learn`` calls: ``BaseAlgorithm._fit_env_steps``, one :class:`RLTrainer` fit of an env-step budget."""

    def _fit_env_steps(
        self: Learner,
        total_timesteps: int,
        env: GymEnv | str | None,
        callback: MaybeCallback,
        log_every_n_steps: int | None,
        tb_log_name: str,
        reset_num_timesteps: bool,
        progress_bar: bool,
        default_root_dir: str | Path | None,
    ) -> Learner: ...


def learn_method(tb_log_name: str, log_every_n_steps: int | None) -> Callable[..., Any]:
    """An algorithm's ``learn`` (SB3's signature, with the algorithm's defaults): ``learn = learn_method("SAC", 4)``
    in the class body; SB3's call form is accepted too (:func:`~lit_sb3.common.sb3_calls.accepts_sb3_learn_form`)."""
    default_tb_log_name, default_log_every_n_steps = tb_log_name, log_every_n_steps

    @accepts_sb3_learn_form
    def learn(
        self: Learner,
        total_timesteps: int,
        env: GymEnv | str | None = None,
        callback: MaybeCallback = None,
        log_every_n_steps: int | None = default_log_every_n_steps,
        tb_log_name: str = default_tb_log_name,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
        default_root_dir: str | Path | None = None,
    ) -> Learner:
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
        return self._fit_env_steps(
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


class SB3TensorBoardLogger(TensorBoardLogger):
    """Lightning's TensorBoard logger writing SB3's run directory: the metrics' event files only (SB3 writes no
    hyperparameters there, so neither ``hparams.yaml`` nor TensorBoard's hparams entries)."""

    def log_hyperparams(
        self, params: dict[str, Any] | Namespace, metrics: dict[str, Any] | None = None, step: int | None = None
    ) -> None:
        pass

    def save(self) -> None:
        self.experiment.flush()


def tensorboard_logger(root: str, name: str, reset_num_timesteps: bool) -> TensorBoardLogger:
    """A TensorBoard logger writing where SB3's ``learn`` would: ``<root>/<name>_<n>``."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        raise ImportError(
            "tensorboard_log: writing TensorBoard events needs the tensorboard package (pip install tensorboard)"
        ) from None
    run_id = get_latest_run_id(root, name) + (1 if reset_num_timesteps else 0)
    return SB3TensorBoardLogger(save_dir=root, name="", version=f"{name}_{run_id}", default_hp_metric=False)


def accelerator_for(device: torch.device | str) -> dict[str, Any]:
    """Trainer placement for an SB3 ``device`` argument ("auto" keeps the RL default, the CPU; "cuda" on a machine
    without CUDA falls back to the CPU, as in SB3)."""
    resolved = None if isinstance(device, str) and device == "auto" else get_device(device)
    if resolved is None or resolved.type == "cpu":
        return {"accelerator": "cpu"}
    return {"accelerator": "gpu" if resolved.type == "cuda" else resolved.type, "devices": [resolved.index or 0]}
