"""``run(cfg)``: one configured run, start to finish, into its run directory.

Skips a run that already completed with the same config, resumes one that has a checkpoint, and never raises for
a failed run: the failure is recorded in ``summary.json`` (so that a sweep's other runs carry on) and returned.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import subprocess
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch
import yaml
from omegaconf import DictConfig, OmegaConf

from lit_bench.checks import (
    ConfigError,
    algorithm_class,
    check_budget,
    check_declared_action_space,
    check_hyperparameters,
    check_spaces,
)
from lit_bench.envs import make_envs
from lit_bench.evaluation import PeriodicEval
from lit_bench.rundir import RunDir, atomic_write_text

INVOCATION_ENV = "LIT_BENCH_INVOCATION"  # set by the sweep report callback: which runs belong to this multirun
_VOLATILE_KEYS = ("force",)  # changing these does not make a finished run stale
_REPO = Path(__file__).resolve().parents[1]


def run_dir_of(cfg: DictConfig) -> Path:
    return Path(cfg.out_dir) / str(cfg.sweep) / str(cfg.algo_dir) / str(cfg.env_name) / f"seed_{cfg.seed}"


def resolved_config(cfg: DictConfig) -> dict[str, Any]:
    container = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(container, dict)
    container.pop("hydra", None)
    return container


def config_hash(config: dict[str, Any]) -> str:
    stable = {k: v for k, v in config.items() if k not in _VOLATILE_KEYS}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:16]


def versions() -> dict[str, str | None]:
    import lit_sb3

    found: dict[str, str | None] = {"lit_sb3": lit_sb3.__version__}
    for dist in ("stable-baselines3", "sb3-contrib", "torch", "lightning", "gymnasium", "mujoco", "hydra-core"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = None
    return found


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=_REPO, capture_output=True, text=True, timeout=10).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain", "-uno"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def task_overrides() -> list[str]:
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except ValueError:  # not inside a Hydra app (tests calling run() directly)
        return []


def steps_to_threshold(rows: list[dict[str, Any]], threshold: float | None) -> int | None:
    if threshold is None:
        return None
    for row in rows:
        if float(row["mean_return"]) >= threshold:
            return int(float(row["timesteps"]))
    return None


def _prepare(cfg: DictConfig) -> tuple[type, int]:
    """Checks that need no env: backend, algorithm class, hyperparameter names, budget, declared action space."""
    algo_cls = algorithm_class(str(cfg.algo._target_), str(cfg.backend))
    check_hyperparameters(algo_cls, cfg.algo, str(cfg.algo_name))
    budget = check_budget(cfg.budget)
    check_declared_action_space(algo_cls, str(cfg.algo_name), str(cfg.env_name), str(cfg.env.action_space))
    if cfg.eval.every is not None and int(cfg.eval.every) <= 0:
        raise ConfigError(f"eval.every={cfg.eval.every}: must be a positive number of env steps (or null)")
    if int(cfg.eval.episodes) <= 0:
        raise ConfigError(f"eval.episodes={cfg.eval.episodes}: must be >= 1")
    if cfg.backend == "lit" and cfg.trainer.get("devices", 1) not in (1, "1", "auto"):
        # the run directory, its evaluations and checkpoints have one writer; ranks would each write them
        raise ConfigError(
            f"trainer.devices={cfg.trainer.devices}: the harness trains each run in one process (sweeps run runs in "
            f"parallel); for several processes per run use lit_sb3.RLTrainer(devices=N, strategy='ddp') directly"
        )
    return algo_cls, budget


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train, evaluate and record one run; return its summary (``status``: completed, skipped or failed)."""
    from lit_bench.backends import BACKENDS, Job

    started = time.perf_counter()
    torch.set_num_threads(int(cfg.get("threads", 1)))
    run_dir = RunDir(run_dir_of(cfg))
    config = resolved_config(cfg)
    digest = config_hash(config)
    invocation = os.environ.get(INVOCATION_ENV)
    previous = run_dir.read_summary()
    base = {
        "algo": str(cfg.algo_name), "env": str(cfg.env_name), "env_id": config["env"].get("id"),
        "seed": int(cfg.seed), "backend": str(cfg.backend), "budget": cfg.budget, "run_dir": str(run_dir.root),
        "config_hash": digest, "invocation": invocation,
    }
    try:
        algo_cls, budget = _prepare(cfg)
    except ConfigError as error:
        summary = {**base, "status": "failed", "error": str(error), "traceback": None}
        if not (previous and previous.get("status") == "completed"):
            run_dir.root.mkdir(parents=True, exist_ok=True)
            run_dir.write_summary(summary)
        return summary

    same_config = previous is not None and previous.get("config_hash") == digest
    if same_config and previous["status"] == "completed" and not cfg.force:
        summary = {**previous, "invocation": invocation}
        run_dir.write_summary(summary)
        return {**summary, "status": "skipped"}
    resume_step = run_dir.checkpoint_step() if same_config and not cfg.force else None
    resume = resume_step is not None and resume_step < budget
    if not resume:
        run_dir.wipe()
    else:
        run_dir.truncate_eval(resume_step)
        run_dir.stash_metrics(resume_step)
    atomic_write_text(run_dir.config, yaml.safe_dump(config, sort_keys=False))
    atomic_write_text(run_dir.overrides, yaml.safe_dump(task_overrides()))

    summary: dict[str, Any] = {
        **base, "status": "running", "resumed_from": resume_step if resume else None,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": socket.gethostname(),
        "python": platform.python_version(), "versions": versions(), "git": git_state(),
    }
    run_dir.write_summary(summary)
    train_env = eval_env = None
    try:
        algo_gamma = cfg.algo.get("gamma")
        train_env, eval_env = make_envs(cfg.env, str(cfg.env_name), int(cfg.seed), algo_gamma)
        check_spaces(algo_cls, str(cfg.algo_name), str(cfg.env_name), cfg.algo.get("policy"), train_env)
        every = int(cfg.eval.every or max(budget // 10, 1))
        evaluator = PeriodicEval(eval_env, run_dir, every, int(cfg.eval.episodes), bool(cfg.eval.deterministic),
                                 wall_time_offset=run_dir.checkpoint_wall_time() if resume else 0.0)
        job = Job(cfg=cfg, algo_cls=algo_cls, run=run_dir, train_env=train_env, evaluator=evaluator, budget=budget,
                  seed=int(cfg.seed), checkpoint_every=int(cfg.checkpoint.every or every), resume=resume)
        model = BACKENDS[str(cfg.backend)](job)
        run_dir.merge_metrics()
        last = evaluator.last_row
        if last is None or int(last["timesteps"]) < model.num_timesteps:
            last = evaluator.evaluate(model)  # the final score is always measured at the end of the budget
        rows = run_dir.eval_rows()
        summary.update(
            status="completed", timesteps=int(model.num_timesteps), final_mean_return=last["mean_return"],
            final_std_return=last["std_return"], final_success_rate=last["success_rate"] or None,
            threshold=cfg.env.get("threshold"), steps_to_threshold=steps_to_threshold(rows, cfg.env.get("threshold")),
            wall_time_s=round(evaluator.wall_time(), 3), fps=last["fps"],
            startup_s=round(evaluator.first_step_at - started, 3) if evaluator.first_step_at else None,
        )
    except ConfigError as error:
        summary.update(status="failed", error=str(error), traceback=None)
    except Exception as error:  # a failed run is recorded, never allowed to take the sweep down
        summary.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
    except BaseException:  # KeyboardInterrupt / SystemExit: leave the checkpoint for the next resume
        summary.update(status="interrupted")
        raise
    finally:
        for env in (train_env, eval_env):
            if env is not None:
                env.close()
        summary["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        run_dir.write_summary(summary)
    return summary


def describe(summary: dict[str, Any]) -> str:
    """One line for the console."""
    name = f"{summary['algo']} on {summary['env']} (seed {summary['seed']}, {summary['backend']})"
    if summary["status"] == "failed":
        return f"{name}: FAILED: {summary.get('error')}"
    score = f"{summary['final_mean_return']:.1f} +/- {summary['final_std_return']:.1f}"
    threshold = summary.get("threshold")
    solved = ""
    if threshold is not None:
        at = summary.get("steps_to_threshold")
        solved = f"; reached {threshold:g} at {at} steps" if at is not None else f"; below {threshold:g}"
    done = "already completed, skipped" if summary["status"] == "skipped" else summary["status"]
    return (f"{name}: {done}; final evaluation {score} after {summary['timesteps']} env steps{solved}; "
            f"results in {summary['run_dir']}")
