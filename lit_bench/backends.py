"""The two ways to train a configured run: ``lit`` (lit_sb3 on RLTrainer) and ``sb3`` (SB3's own ``learn``).

Both get the same envs, the same evaluation callback and write the same files: ``train/metrics.csv`` (Lightning's
CSV schema: a ``step`` column plus SB3's metric names, sorted), ``eval.csv``, ``checkpoints/``.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any

from gymnasium import spaces
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.logger import KVWriter, Logger, TensorBoardOutputFormat
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_bench.checkpointing import LIT_CHECKPOINT, SB3_CHECKPOINT, SB3_REPLAY_BUFFER, LitCheckpoint, SB3Checkpoint
from lit_bench.checks import ConfigError, sb3_equivalent
from lit_bench.evaluation import PeriodicEval
from lit_bench.rundir import RunDir, atomic_write_text, csv_text


@dataclass
class Job:
    """Everything a backend needs for one run."""

    cfg: DictConfig
    algo_cls: type
    run: RunDir
    train_env: VecEnv
    evaluator: PeriodicEval
    budget: int
    seed: int
    checkpoint_every: int
    resume: bool


def algorithm_kwargs(job: Job, backend: str) -> dict[str, Any]:
    """The algo config's arguments as Python objects (schedules, classes); action noise sized to the env."""
    node = OmegaConf.to_container(job.cfg.algo, resolve=True)
    assert isinstance(node, dict)
    node = {k: v for k, v in node.items() if not (k.startswith("_") and k.endswith("_"))}
    kwargs: dict[str, Any] = instantiate(node, _convert_="all")
    noise = kwargs.get("action_noise")
    if isinstance(noise, functools.partial):
        action_space = job.train_env.action_space
        if not isinstance(action_space, spaces.Box):
            raise ConfigError(f"algo.action_noise: needs Box actions, the env has {type(action_space).__name__}")
        kwargs["action_noise"] = noise(n_actions=int(action_space.shape[-1]))
    if backend == "sb3":
        kwargs = {k: sb3_equivalent(v) for k, v in kwargs.items()}
    elif job.cfg.get("parity"):  # SB3's exact optimizer: the run is backend=sb3's to the last bit
        from lit_sb3 import sb3_parity

        kwargs["policy_kwargs"] = sb3_parity(kwargs.get("policy_kwargs"))
    return kwargs


def _load_vecnormalize(job: Job) -> None:
    if isinstance(job.train_env, VecNormalize) and job.run.vecnormalize.is_file():
        saved = VecNormalize.load(str(job.run.vecnormalize), job.train_env.venv)
        job.train_env.obs_rms, job.train_env.ret_rms = saved.obs_rms, saved.ret_rms


# ---------------------------------------------------------------------------------------------------- lit


def train_lit(job: Job) -> Any:
    import lightning as L
    from lightning.pytorch.loggers import CSVLogger

    from lit_sb3 import RLEnvDataModule, RLTrainer
    from lit_sb3.common.off_policy import OffPolicyAlgorithm

    model = job.algo_cls(**algorithm_kwargs(job, "lit"), seed=job.seed, verbose=0)
    if isinstance(model, OffPolicyAlgorithm):
        model.checkpoint_replay_buffer = bool(job.cfg.checkpoint.replay_buffer)
    if job.cfg.get("log_interval") is not None:
        model.log_interval = int(job.cfg.log_interval)
    loggers: list[Any] = [CSVLogger(save_dir=str(job.run.root), name="train", version="")]
    loggers += [instantiate(node, save_dir=str(job.run.root)) for node in job.cfg.logger.extra]
    trainer_kwargs = OmegaConf.to_container(job.cfg.trainer, resolve=True)
    assert isinstance(trainer_kwargs, dict)
    trainer = RLTrainer(
        max_steps=job.budget,
        rl_callback=job.evaluator,
        run_name=f"{job.cfg.algo_name}_{job.cfg.env_name}_seed{job.seed}",
        logger=loggers,
        callbacks=[LitCheckpoint(job.run, job.checkpoint_every, job.evaluator.wall_time)],
        default_root_dir=str(job.run.root),
        **trainer_kwargs,
    )
    ckpt_path = None
    if job.resume:
        _load_vecnormalize(job)
        ckpt_path = str(job.run.checkpoints / LIT_CHECKPOINT)
    with warnings.catch_warnings():
        # resumed runs reuse train/ on purpose (rows up to the checkpoint were stashed by RunDir)
        warnings.filterwarnings("ignore", message=r".*Experiment logs directory .* exists and is not empty.*")
        warnings.filterwarnings("ignore", message=r".*Skipping '.*' parameter because.*")
        L.seed_everything(job.seed, verbose=False)
        # The checkpoint is this run's own (written by LitCheckpoint into its run dir), so unpickling the objects
        # its hyperparameters hold (action noise, schedules, classes) is trusted; torch's default would refuse them.
        trainer.fit(model, datamodule=RLEnvDataModule(train_env=job.train_env), ckpt_path=ckpt_path,
                    weights_only=False)
    return model


# ---------------------------------------------------------------------------------------------------- sb3


class MetricsCSV(KVWriter):
    """SB3 output format writing ``train/metrics.csv`` in the schema of Lightning's CSVLogger."""

    def __init__(self, run: RunDir) -> None:
        self.path = run.metrics_csv
        self.rows: list[dict[str, Any]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        row = {k: v for k, v in key_values.items() if "csv" not in key_excluded.get(k, ()) and _scalar(v)}
        self.rows.append({**row, "step": step})
        fields = sorted({key for r in self.rows for key in r})
        atomic_write_text(self.path, csv_text(fields, self.rows))

    def close(self) -> None:
        pass


def _scalar(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or getattr(value, "size", 0) == 1


def train_sb3(job: Job) -> Any:
    from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm

    kwargs = algorithm_kwargs(job, "sb3")
    if job.resume:
        _load_vecnormalize(job)
        model = job.algo_cls.load(str(job.run.checkpoints / SB3_CHECKPOINT), env=job.train_env)
        buffer = job.run.checkpoints / SB3_REPLAY_BUFFER
        if isinstance(model, OffPolicyAlgorithm) and buffer.is_file():
            model.load_replay_buffer(str(buffer))
    else:
        model = job.algo_cls(env=job.train_env, seed=job.seed, verbose=0, **kwargs)
    formats: list[KVWriter] = [MetricsCSV(job.run)]
    if any("TensorBoard" in str(node.get("_target_")) for node in job.cfg.logger.extra):
        formats.append(TensorBoardOutputFormat(str(job.run.train_dir / "tb")))
    model.set_logger(Logger(folder=str(job.run.train_dir), output_formats=formats))
    checkpoint = SB3Checkpoint(job.run, job.checkpoint_every, job.evaluator.wall_time,
                               replay_buffer=bool(job.cfg.checkpoint.replay_buffer))
    log_interval = {} if job.cfg.get("log_interval") is None else {"log_interval": int(job.cfg.log_interval)}
    model.learn(total_timesteps=job.budget - model.num_timesteps, callback=[job.evaluator, checkpoint],
                reset_num_timesteps=not job.resume, **log_interval)
    return model


BACKENDS = {"lit": train_lit, "sb3": train_sb3}

__all__ = ["BACKENDS", "Job", "MetricsCSV", "algorithm_kwargs"]
