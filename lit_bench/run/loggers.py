"""The run's loggers: CSV always (``train/metrics.csv``); TensorBoard and W&B added by ``logger=...``.

Each ``conf/logger/<name>.yaml`` adds one entry under ``logger.extra.<name>``, so ``logger=[tensorboard,wandb]``
composes both. Both backends log to the same places: lit through Lightning's loggers, sb3 through SB3's output
formats. W&B runs are named after the run, grouped by sweep, tagged with algo, env, backend and seed, and carry the
resolved config. TensorBoard and W&B need the ``loggers`` extra (``pip install -e '.[loggers]'``; checked before
training: ``lit_bench.config.checks.check_loggers``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.logger import KVWriter, TensorBoardOutputFormat

from lit_bench.config.checks import ConfigError
from lit_bench.config.identity import sweep_path
from lit_bench.store.rundir import RunDir

# W&B's x-axis of every metric, in both backends: the env step (Lightning's WandbLogger logs it under this name with
# every dump; the sb3 backend logs it too), so that lit and sb3 runs overlay in one workspace
ENV_STEP_AXIS = "trainer/global_step"


def logger_nodes(cfg: DictConfig) -> dict[str, DictConfig]:
    """name -> Lightning logger node of every logger chosen besides CSV."""
    extra = cfg.logger.get("extra") or {}
    return {str(name): node for name, node in extra.items()}


def _kind(node: Mapping[str, Any]) -> str:
    return str(node.get("_target_", "")).rpartition(".")[2]


def wandb_identity(cfg: DictConfig, run: RunDir) -> dict[str, Any]:
    """W&B run name (the run directory below ``out_dir``: configs that differ never share one), group (the sweep),
    tags and the whole resolved config (as the run recorded it)."""
    config = yaml.safe_load(run.config.read_text()) if run.config.is_file() else {}
    return {
        "name": str(Path(str(cfg.sweep)) / run.root.relative_to(sweep_path(cfg))),
        "group": str(cfg.sweep),
        "tags": [str(cfg.algo_name), str(cfg.env_name), str(cfg.backend), f"seed_{cfg.seed}"],
        "config": config,
    }


def lightning_loggers(cfg: DictConfig, run: RunDir) -> list[Any]:
    """Lightning loggers for the lit backend: CSV, then each chosen logger."""
    from lightning.pytorch.loggers import CSVLogger

    loggers: list[Any] = [CSVLogger(save_dir=str(run.root), name="train", version="")]
    for node in logger_nodes(cfg).values():
        wandb = _kind(node) == "WandbLogger"
        extra = wandb_identity(cfg, run) if wandb else {}
        if wandb:  # a W&B run left open in this process (an earlier run's) would otherwise receive this run's metrics
            finish_loggers()
        # a partial, because "config" would clash with instantiate's own argument (and must not be instantiated)
        loggers.append(instantiate(node, _partial_=True, save_dir=str(run.root))(**extra))
        if wandb:
            define_env_step_axis(loggers[-1].experiment)  # (Lightning defines the same: not left to its version)
    return loggers


def define_env_step_axis(run: Any) -> None:
    """Every metric of the W&B ``run`` plotted against ``ENV_STEP_AXIS`` (the env step)."""
    run.define_metric(ENV_STEP_AXIS)
    run.define_metric("*", step_metric=ENV_STEP_AXIS, step_sync=True)


class WandbOutputFormat(KVWriter):
    """SB3 output format logging every dump to a W&B run at the env step (the sb3 backend's W&B logger)."""

    def __init__(self, **init_kwargs: Any) -> None:
        import wandb

        self.run = wandb.init(**init_kwargs)
        define_env_step_axis(self.run)

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        metrics = {k: float(v) for k, v in key_values.items() if "wandb" not in key_excluded.get(k, ()) and scalar(v)}
        if metrics:  # _step is the env step too, as SB3's own W&B runs have it
            self.run.log({**metrics, ENV_STEP_AXIS: int(step)}, step=int(step))

    def close(self) -> None:
        self.run.finish()


def scalar(value: Any) -> bool:
    """A number SB3's logger may hold (int, float, numpy scalar), not a bool."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or getattr(value, "size", 0) == 1


def finish_loggers() -> None:
    """End the W&B run this run started (after its final evaluation), so that the next run in the same process (a
    sequential or joblib sweep) starts its own instead of logging into this one."""
    wandb = sys.modules.get("wandb")
    if wandb is not None and wandb.run is not None:
        wandb.finish()


def sb3_output_formats(cfg: DictConfig, run: RunDir) -> list[KVWriter]:
    """SB3 output formats for the sb3 backend writing where the lit backend's loggers write (CSV is added by the
    caller)."""
    formats: list[KVWriter] = []
    for node in logger_nodes(cfg).values():
        kind = _kind(node)
        if kind == "TensorBoardLogger":
            formats.append(
                TensorBoardOutputFormat(str(run.root / str(node.get("name", "train")) / str(node.get("version", "tb"))))
            )
        elif kind == "WandbLogger":
            settings = OmegaConf.to_container(node, resolve=True)
            assert isinstance(settings, dict)
            formats.append(
                WandbOutputFormat(
                    project=settings.get("project"),
                    mode="offline" if settings.get("offline") else None,
                    dir=str(run.root),
                    **wandb_identity(cfg, run),
                )
            )
        else:
            raise ConfigError(f"logger: {node.get('_target_')} has no sb3-backend equivalent; use it with backend=lit")
    return formats
