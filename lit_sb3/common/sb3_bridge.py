"""Bridges that let SB3 callbacks and SB3's logger run unchanged inside a Lightning run."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from numbers import Number
from typing import Any

import lightning as L
import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, ConvertCallback
from stable_baselines3.common.logger import DISABLED, HumanOutputFormat, KVWriter, Logger
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.common.utils import safe_mean

from lit_sb3.lightning_compat import attached_trainer

# SB3's exclusion names ("csv", "tensorboard", ...) for Lightning's loggers.
_FORMAT_OF_LOGGER = {"CSVLogger": "csv", "TensorBoardLogger": "tensorboard", "WandbLogger": "wandb"}


class LightningKVWriter(KVWriter):
    """An SB3 output format that writes each ``logger.dump(step)`` to the Lightning trainer's loggers.

    ``step`` is the env-step count, so every Lightning logger plots against env steps. Values also reach
    ``trainer.callback_metrics``, so ``ModelCheckpoint(monitor="rollout/ep_rew_mean")`` and ``EarlyStopping`` work.
    """

    def __init__(self, algorithm: L.LightningModule) -> None:
        self.algorithm = algorithm

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        trainer = attached_trainer(self.algorithm)
        if trainer is None:
            return
        scalars = {k: float(v) for k, v in key_values.items() if _is_scalar(v)}
        for lg in trainer.loggers:
            fmt = _format_of(lg)
            metrics = {k: v for k, v in scalars.items() if fmt not in key_excluded.get(k, ())}
            if metrics:
                lg.log_metrics(metrics, step=step)
                lg.save()  # a killed run keeps every dump written so far
        trainer.callback_metrics.update({k: torch.tensor(v) for k, v in scalars.items()})

    def close(self) -> None:
        pass


def _format_of(logger: Any) -> str:
    """SB3's format name of a Lightning logger (its subclasses' too), "log" for others."""
    return next((_FORMAT_OF_LOGGER[c.__name__] for c in type(logger).__mro__ if c.__name__ in _FORMAT_OF_LOGGER), "log")


def _is_scalar(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.numel() == 1
    if isinstance(value, np.ndarray):
        return value.size == 1
    return isinstance(value, Number) and not isinstance(value, bool)


class AlgorithmLogger(Logger):
    """SB3's ``Logger`` of an algorithm (``model.logger``): ``record`` / ``dump`` as in SB3, and, inside a fit, every
    other attribute from the trainer's Lightning logger (``experiment``, ``log_metrics``, ``save_dir``, ...), so that
    SB3 callbacks and Lightning-style module code both find theirs (the two APIs share no names).

    ``output_formats`` holds what the user chose, as SB3's (stdout's table with ``verbose=1``); each dump also goes
    to the trainer's Lightning loggers (CSV, TensorBoard, ...) through ``lightning_writer``, kept out of that list
    (code that writes to a logger's formats directly, as the harness's evaluations do, writes to it too). ``dir`` is
    the log folder of the last ``learn`` (see :func:`lit_sb3.common.learn.learn_method`).
    """

    def __init__(self, algorithm: L.LightningModule, output_formats: list[KVWriter]) -> None:
        super().__init__(folder=None, output_formats=output_formats)
        self._algorithm = algorithm
        self.lightning_writer = LightningKVWriter(algorithm)

    def dump(self, step: int = 0) -> None:
        if self.level != DISABLED:
            self.lightning_writer.write(self.name_to_value, self.name_to_excluded, step)
        super().dump(step)

    def __getattr__(self, name: str) -> Any:
        algorithm = self.__dict__.get("_algorithm")  # absent while unpickling
        trainer = attached_trainer(algorithm) if algorithm is not None and not name.startswith("__") else None
        lightning_logger = trainer.logger if trainer is not None else None
        if lightning_logger is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r} (and no Lightning logger is active)")
        return getattr(lightning_logger, name)


def make_sb3_logger(algorithm: L.LightningModule, verbose: int) -> Logger:
    """SB3 ``Logger`` writing to Lightning's loggers, and to stdout as SB3's table when ``verbose >= 1``."""
    formats: list[KVWriter] = [HumanOutputFormat(sys.stdout)] if verbose >= 1 else []
    return AlgorithmLogger(algorithm, formats)


def as_callback(callback: MaybeCallback) -> BaseCallback | None:
    """SB3's accepted callback forms (None, function, list, BaseCallback) as one BaseCallback (or None)."""
    if callback is None:
        return None
    if isinstance(callback, list):
        return CallbackList([c for c in (as_callback(c) for c in callback) if c is not None])
    if isinstance(callback, BaseCallback):
        return callback
    if callable(callback):
        return ConvertCallback(callback)
    raise TypeError(f"callback: expected an SB3 BaseCallback, a list of them or a function, got {type(callback)}")


def record_rollout_stats(
    logger: Logger,
    episodes: Iterable[dict[str, Any]],
    successes: Iterable[bool],
    num_timesteps: int,
    steps_this_run: int,
    start_time_ns: int,
) -> None:
    """SB3's ``rollout/*`` episode means (over the stats window) and ``time/*`` entries."""
    elapsed = max((time.time_ns() - start_time_ns) / 1e9, 1e-9)
    episodes, successes = list(episodes), list(successes)
    if episodes:
        logger.record("rollout/ep_rew_mean", safe_mean([ep["r"] for ep in episodes]))
        logger.record("rollout/ep_len_mean", safe_mean([ep["l"] for ep in episodes]))
    if successes:
        logger.record("rollout/success_rate", safe_mean(successes))
    logger.record("time/fps", int(steps_this_run / elapsed))
    logger.record("time/time_elapsed", int(elapsed), exclude="tensorboard")
    logger.record("time/total_timesteps", num_timesteps, exclude="tensorboard")


class PolicyNetwork:
    """SB3's name on the algorithm for one of its policy's networks: ``q_net = PolicyNetwork()`` in DQN's class body
    makes ``model.q_net`` read ``model.policy.q_net`` (None before the networks are built)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, algorithm: Any, owner: type | None = None) -> Any:
        if algorithm is None:
            return self
        policy = algorithm.policy
        return getattr(policy, self.name) if policy is not None else None

    def __set__(self, algorithm: Any, value: Any) -> None:
        setattr(algorithm.policy, self.name, value)
