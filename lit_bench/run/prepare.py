"""The checks a run passes before its directory changes and before any env is built (run options aside,
checked in ``train.run``): algorithm, hyperparameters, budget, action space, env package, loggers, video, objective,
console, processes, precision, trainer options; and the warnings of a budget that shows little."""

from __future__ import annotations

import os
import sys

from omegaconf import DictConfig

from lit_bench.config.budget import PLANNED_ENV, budget_warnings
from lit_bench.config.checks import (
    ConfigError,
    algorithm_class,
    check_budget,
    check_declared_action_space,
    check_hyperparameter_values,
    check_hyperparameters,
    check_objective,
    check_precision,
    check_trainer_options,
)
from lit_bench.config.envs import require_package
from lit_bench.run.console import choose_mode
from lit_bench.run.loggers import check_loggers
from lit_bench.run.ranks import check_processes
from lit_bench.run.video import check_eval_video


def prepare(cfg: DictConfig) -> tuple[type, int]:
    """Checks that need no env: run options, backend, algorithm class, hyperparameters, budget, action space,
    env package, loggers, objective (the run options are checked before, in ``run``)."""
    algo_cls = algorithm_class(str(cfg.algo._target_), str(cfg.backend))
    check_hyperparameters(algo_cls, cfg.algo, str(cfg.algo_name))
    check_hyperparameter_values(algo_cls, cfg.algo)
    budget = check_budget(cfg.budget)
    check_declared_action_space(algo_cls, str(cfg.algo_name), str(cfg.env_name), str(cfg.env.action_space))
    check_loggers(cfg)
    require_package(cfg.env, str(cfg.env_name))  # a missing env family names its extra before any run dir changes
    check_eval_video(cfg.eval, cfg.env, str(cfg.env_name))
    check_objective(cfg.objective)
    console_mode(cfg)
    check_processes(cfg, algo_cls)
    check_precision(cfg)
    check_trainer_options(cfg)
    return algo_cls, budget


def console_mode(cfg: DictConfig) -> str:
    """``console.progress`` resolved for this process (``auto``: a bar on a terminal, lines in logs and sweeps)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # run(cfg) called from Python
        multirun = False
    console = cfg.get("console") or {}
    try:
        return choose_mode(
            str(console.get("progress", "auto")),
            terminal=sys.stderr.isatty(),
            multirun=multirun,
            lightning_bar=str(cfg.backend) == "lit" and bool(cfg.trainer.get("enable_progress_bar")),
        )
    except ValueError as error:
        raise ConfigError(str(error)) from None


def warn_budget(cfg: DictConfig, budget: int) -> None:
    """The budget's warning lines (``config.budget.budget_warnings``: a rollout the budget overshoots, ...), unless
    the sweep's plan printed them already (once per sweep, not once per run)."""
    if not os.environ.get(PLANNED_ENV):
        for line in budget_warnings(cfg, budget):
            print(f"warning: {line}", file=sys.stderr, flush=True)
