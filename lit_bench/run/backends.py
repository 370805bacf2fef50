"""The two ways to train a configured run: ``lit`` (lit_sb3 on RLTrainer) and ``sb3`` (SB3's own ``learn``).

Both get the same envs, the same evaluation callback and write the same files: ``train/metrics.csv`` (Lightning's
CSV schema: a ``step`` column plus SB3's metric names, sorted), ``eval.csv``, ``checkpoints/``.
"""

from __future__ import annotations

import functools
import json
import warnings
from dataclasses import dataclass
from typing import Any

from gymnasium import spaces
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.base_class import BaseAlgorithm as SB3Algorithm
from stable_baselines3.common.logger import KVWriter, Logger
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_bench.config.checks import VARIANT_BASE, ConfigError, sb3_equivalent
from lit_bench.run.checkpointing import (
    LIT_CHECKPOINT,
    SB3_CHECKPOINT,
    LitCheckpoint,
    SB3Checkpoint,
)
from lit_bench.run.evaluation import PeriodicEval
from lit_bench.run.loggers import lightning_loggers, sb3_output_formats, scalar
from lit_bench.run.stopping import LitStopOnSignal, SB3StopOnSignal
from lit_bench.store.format import SB3_REPLAY_BUFFER, SB3_VECNORMALIZE
from lit_bench.store.rundir import RunDir, atomic_write_text, csv_text


@dataclass
class Job:
    """Everything a backend needs for one run."""

    cfg: DictConfig
    algo_cls: type
    run: RunDir
    train_env: VecEnv
    evaluator: PeriodicEval | None  # None: a further rank of a multi-process run (rank 0 evaluates)
    budget: int
    seed: int
    checkpoint_every: int
    resume: bool


def algorithm_kwargs(job: Job, backend: str) -> dict[str, Any]:
    """The algo config's arguments as Python objects (schedules, classes); action noise sized to the env."""
    kwargs = algorithm_kwargs_for(job.cfg.algo, job.train_env.action_space, backend)
    if backend == "lit" and job.cfg.get("parity"):  # SB3's exact optimizer: the run is backend=sb3's to the last bit
        from lit_sb3 import sb3_parity

        kwargs["policy_kwargs"] = sb3_parity(kwargs.get("policy_kwargs"))
    return kwargs


def algorithm_kwargs_for(algo_cfg: DictConfig, action_space: spaces.Space, backend: str) -> dict[str, Any]:
    """:func:`algorithm_kwargs` from the algo config node and the env's action space alone."""
    container = OmegaConf.to_container(algo_cfg, resolve=True)
    assert isinstance(container, dict)
    items = {str(k): v for k, v in container.items()}  # an algo config's keys are argument names
    node = {k: v for k, v in items.items() if not (k.startswith("_") and k.endswith("_")) and k != VARIANT_BASE}
    kwargs: dict[str, Any] = instantiate(node, _convert_="all")
    noise = kwargs.get("action_noise")
    if isinstance(noise, functools.partial):
        if not isinstance(action_space, spaces.Box):
            raise ConfigError(f"algo.action_noise: needs Box actions, the env has {type(action_space).__name__}")
        kwargs["action_noise"] = noise(n_actions=int(action_space.shape[-1]))
    if backend == "sb3":
        kwargs = {k: sb3_equivalent(v) for k, v in kwargs.items()}
    return kwargs


# ---------------------------------------------------------------------------------------------------- lit


def train_lit(job: Job) -> Any:
    import lightning as L

    from lit_sb3 import RLEnvDataModule, RLTrainer
    from lit_sb3.common.off_policy import OffPolicyAlgorithm

    model = job.algo_cls(**algorithm_kwargs(job, "lit"), seed=job.seed, verbose=0)
    if isinstance(model, OffPolicyAlgorithm):
        model.checkpoint_replay_buffer = bool(job.cfg.checkpoint.replay_buffer)
    if job.cfg.get("log_interval") is not None:
        model.log_interval = int(job.cfg.log_interval)
    loggers = lightning_loggers(job.cfg, job.run)
    trainer_node = OmegaConf.to_container(job.cfg.trainer, resolve=True)
    assert isinstance(trainer_node, dict)
    trainer_kwargs = {str(k): v for k, v in trainer_node.items()}  # Trainer argument names
    checkpoint = LitCheckpoint(job.run, job.checkpoint_every, job.evaluator.wall_time if job.evaluator else float)
    trainer = RLTrainer(
        max_steps=job.budget,
        rl_callback=job.evaluator,
        run_name=f"{job.cfg.algo_name}_{job.cfg.env_name}_seed{job.seed}",
        logger=loggers,
        callbacks=[checkpoint, LitStopOnSignal(checkpoint)],
        default_root_dir=str(job.run.root),
        **trainer_kwargs,
    )
    ckpt_path = None
    if job.resume:  # the checkpoint holds the VecNormalize statistics, the envs' replay log, RNGs, buffer
        ckpt_path = str(job.run.checkpoints / LIT_CHECKPOINT)
    with warnings.catch_warnings():
        # resumed runs reuse train/ on purpose (rows up to the checkpoint were stashed by RunDir)
        warnings.filterwarnings("ignore", message=r".*Experiment logs directory .* exists and is not empty.*")
        warnings.filterwarnings("ignore", message=r".*Skipping '.*' parameter because.*")
        L.seed_everything(job.seed, verbose=False)
        # weights_only: the objects its hyperparameters hold (action noise, schedules, classes) are allow-listed
        trainer.fit(model, datamodule=RLEnvDataModule(train_env=job.train_env), ckpt_path=ckpt_path)
    return model


# ---------------------------------------------------------------------------------------------------- sb3


class MetricsCSV(KVWriter):
    """SB3 output format writing ``train/metrics.csv`` in the schema of Lightning's CSVLogger."""

    def __init__(self, run: RunDir) -> None:
        self.path = run.metrics_csv
        self.rows: list[dict[str, Any]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        if self.add(key_values, key_excluded, step):
            self.flush()

    def add(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> bool:
        """Keep a row for the next :meth:`flush` (False: nothing of it goes to the CSV)."""
        row = {k: v for k, v in key_values.items() if "csv" not in key_excluded.get(k, ()) and scalar(v)}
        if not row:  # e.g. the evaluations, which eval.csv records
            return False
        self.rows.append({**row, "step": step})
        return True

    def flush(self) -> None:
        """Write every row kept so far (the whole file, atomically: a reader never sees half a row)."""
        fields = sorted({key for r in self.rows for key in r})
        atomic_write_text(self.path, csv_text(fields, self.rows))

    def close(self) -> None:
        pass


def train_sb3(job: Job) -> Any:
    kwargs = algorithm_kwargs(job, "sb3")
    model = job.algo_cls(env=job.train_env, seed=job.seed, verbose=0, **kwargs)
    if job.resume:
        _resume_sb3(job, model)
    formats: list[KVWriter] = [MetricsCSV(job.run), *sb3_output_formats(job.cfg, job.run)]
    model.set_logger(Logger(folder=str(job.run.train_dir), output_formats=formats))
    evaluator = job.evaluator
    assert evaluator is not None, "train_sb3: its one process evaluates"
    checkpoint = SB3Checkpoint(
        job.run, job.checkpoint_every, evaluator.wall_time, replay_buffer=bool(job.cfg.checkpoint.replay_buffer)
    )
    log_interval = {} if job.cfg.get("log_interval") is None else {"log_interval": int(job.cfg.log_interval)}
    callbacks = [evaluator, checkpoint, SB3StopOnSignal(checkpoint)]
    model.learn(
        total_timesteps=job.budget - model.num_timesteps,
        callback=callbacks,
        reset_num_timesteps=not job.resume,
        **log_interval,
    )
    return model


# counters SB3's zip keeps as plain JSON values; the rest of the model comes from the config, as for a new run
_SB3_COUNTERS = ("num_timesteps", "_n_updates", "_episode_num", "_n_calls", "exploration_rate")


def _resume_sb3(job: Job, model: SB3Algorithm) -> None:
    """Resume without unpickling: parameters and optimizer states (SB3 reads them with ``weights_only=True``),
    counters from the zip's JSON, replay buffer and VecNormalize statistics from tensor files."""
    import zipfile

    import torch
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    from lit_sb3.common.replay import restore_buffer_arrays
    from lit_sb3.common.resume import set_vecnormalize_state

    path = job.run.checkpoints / SB3_CHECKPOINT
    model.set_parameters(str(path), exact_match=True, device=model.device)
    with zipfile.ZipFile(path) as archive:
        data = json.loads(archive.read("data"))
    for key in _SB3_COUNTERS:
        if isinstance(data.get(key), (int, float)):
            setattr(model, key, data[key])
    buffer = job.run.checkpoints / SB3_REPLAY_BUFFER
    if isinstance(model, OffPolicyAlgorithm) and model.replay_buffer is not None and buffer.is_file():
        restore_buffer_arrays(model.replay_buffer, torch.load(buffer, weights_only=True))
    normalize = job.run.checkpoints / SB3_VECNORMALIZE
    if isinstance(job.train_env, VecNormalize) and normalize.is_file():
        set_vecnormalize_state(job.train_env, torch.load(normalize, weights_only=True))


BACKENDS = {"lit": train_lit, "sb3": train_sb3}

__all__ = ["BACKENDS", "Job", "MetricsCSV", "algorithm_kwargs", "algorithm_kwargs_for"]
