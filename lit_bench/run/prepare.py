"""The checks a run passes before its directory changes and before any env is built (run options aside,
checked in ``train.run``): algorithm, hyperparameters, budget, action space, env package, loggers, video, objective,
console, processes, precision, trainer options; and the warning for a budget the last rollout overshoots."""

from __future__ import annotations

import sys

from omegaconf import DictConfig

from lit_bench.config.checks import (
    ConfigError,
    algorithm_class,
    check_budget,
    check_declared_action_space,
    check_hyperparameter_values,
    check_hyperparameters,
    check_precision,
    check_trainer_options,
)
from lit_bench.config.envs import require_package
from lit_bench.run.console import choose_mode
from lit_bench.run.loggers import check_loggers
from lit_bench.run.objective import check_objective
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


def warn_overshoot(cfg: DictConfig, budget: int) -> None:
    """One warning line when an on-policy budget is not a multiple of its rollout: the last rollout runs to its end
    (SB3's ``learn`` does the same; cutting it short would change the algorithm), so more env steps are trained
    than asked for. The summary's ``timesteps`` records them; the report labels and compares the run with them."""
    n_steps = cfg.algo.get("n_steps")
    if not isinstance(n_steps, int) or isinstance(n_steps, bool) or n_steps <= 0:
        return
    rollout = n_steps * int(cfg.env.get("n_envs") or 1)
    if budget % rollout:
        trained = -(-budget // rollout) * rollout
        print(
            f"warning: budget={budget} is not a multiple of the {rollout} env steps of one rollout "
            f"({cfg.env.get('n_envs') or 1} envs x n_steps={n_steps}): {cfg.algo_name} trains {trained} env steps, "
            f"as SB3's learn does; the summary and the report say {trained}",
            file=sys.stderr,
            flush=True,
        )
