"""``run(cfg)``: one configured run, start to finish, into its run directory.

The directory is the config's own (``lit_bench.identity``) and has one writer at a time (``RunDir.lock``). Skips a
run that already completed with the same config, resumes one that has a checkpoint, never touches a directory that
holds another config, and never raises for a failed run: the failure is recorded in ``summary.json`` (so that a
sweep's other runs carry on) and returned.
"""

from __future__ import annotations

import math
import os
import platform
import socket
import subprocess
import sys
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch
import yaml
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.vec_env import sync_envs_normalization

from lit_bench.analysis import aggregate
from lit_bench.best import BestCheckpoint
from lit_bench.checkpointing import resume_point
from lit_bench.checks import (
    ConfigError,
    algorithm_class,
    check_budget,
    check_declared_action_space,
    check_hyperparameter_values,
    check_hyperparameters,
    check_precision,
    check_run_options,
    check_spaces,
)
from lit_bench.envs import EVAL_SEED_OFFSET, make_envs, require_package
from lit_bench.evaluation import PeriodicEval
from lit_bench.identity import RunIdentity, config_hash, config_id, identify, resolved
from lit_bench.loggers import check_loggers, finish_loggers
from lit_bench.objective import check_objective, score
from lit_bench.ranks import check_processes, hand_plan, process_rank, requested_devices, run_rank
from lit_bench.rundir import RunDir, atomic_write_text
from lit_bench.signals import Interrupted
from lit_bench.video import check_eval_video, eval_video

INVOCATION_ENV = "LIT_BENCH_INVOCATION"  # set by the sweep report callback: which runs belong to this multirun
_REPO = Path(__file__).resolve().parents[1]


def run_dir_of(cfg: DictConfig, identity: RunIdentity | None = None) -> Path:
    return Path(cfg.out_dir) / str(cfg.sweep) / (identity or identify(cfg)).subdir


def resolved_config(cfg: DictConfig) -> dict[str, Any]:
    return resolved(cfg)


def hydra_output_dir() -> Path | None:
    """The directory Hydra made for this job (None outside run.py)."""
    from hydra.core.hydra_config import HydraConfig

    try:
        output_dir = OmegaConf.select(HydraConfig.get(), "runtime.output_dir", default=None)
    except ValueError:  # not inside a Hydra app
        return None
    return Path(output_dir).resolve() if output_dir else None  # None: a composed config (tests) has none


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
    at = aggregate.steps_to_threshold(  # the report's definition (held for several evaluations), in one place
        [float(r["timesteps"]) for r in rows], [float(r["mean_return"]) for r in rows], float(threshold))
    return None if math.isnan(at) else int(at)


def _prepare(cfg: DictConfig) -> tuple[type, int]:
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
    check_processes(cfg, algo_cls)
    check_precision(cfg)
    return algo_cls, budget


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train, evaluate and record one run; return its summary (``status``: completed, skipped or failed).

    ``objective`` (the score a sweeper gets, see ``lit_bench.objective``) is set for completed and skipped runs.
    """
    if process_rank() > 0:  # a further process of a multi-process run (Lightning started it): trains, writes nothing
        return run_rank(cfg)
    try:
        check_run_options(cfg)  # seed, threads, ... shape the run directory: checked before it is named
    except ConfigError as error:
        return {"algo": str(cfg.algo_name), "env": str(cfg.env_name), "seed": cfg.seed, "backend": str(cfg.backend),
                "run_dir": None, "status": "failed", "error": str(error), "traceback": None}
    config = resolved_config(cfg)
    identity = identify(config)
    run_dir = RunDir(run_dir_of(cfg, identity))
    base = {
        "algo": str(cfg.algo_name), "env": str(cfg.env_name), "env_id": config["env"].get("id"),
        "seed": int(cfg.seed), "backend": str(cfg.backend), "budget": cfg.budget, "run_dir": str(run_dir.root),
        "sweep": str(cfg.sweep), "variant": identity.variant, "config_id": identity.config_id,
        "config_hash": identity.config_hash, "overrides": identity.overrides,
        "invocation": os.environ.get(INVOCATION_ENV),
    }
    hydra_dir = hydra_output_dir()
    if hydra_dir is not None and hydra_dir != run_dir.root.resolve():
        return {**base, "status": "failed", "traceback": None, "error": (
            f"hydra.run.dir / hydra.sweep.dir: Hydra's job directory {hydra_dir} is not the run's {run_dir.root}; "
            "place runs with out_dir= and sweep= instead")}
    with run_dir.lock():
        return _run_locked(cfg, config, run_dir, base)


def _run_locked(cfg: DictConfig, config: dict[str, Any], run_dir: RunDir, base: dict[str, Any]) -> dict[str, Any]:
    from lit_bench.backends import BACKENDS, Job

    started = time.perf_counter()
    previous = run_dir.read_summary()
    held = run_dir.read_config()
    if held is not None and config_hash(held) != base["config_hash"]:
        # Only possible when the composed defaults changed since that run (or for runs of an older layout).
        return {**base, "status": "failed", "traceback": None, "error": (
            f"{run_dir.root} holds a {(previous or {}).get('status', 'started')} run of another config (config_id "
            f"{config_id(held)}, this one {base['config_id']}); nothing was changed: use another sweep= or move it")}
    try:
        algo_cls, budget = _prepare(cfg)
    except ConfigError as error:
        summary = {**base, "status": "failed", "error": str(error), "traceback": None}
        if not (previous and previous.get("status") == "completed"):
            try:
                run_dir.root.mkdir(parents=True, exist_ok=True)
                run_dir.write_summary(summary)
            except OSError:
                pass  # out_dir itself is the mistake: the returned summary is the only record
        return summary
    torch.set_num_threads(int(cfg.threads))

    same_config = held is not None and previous is not None
    damage = run_dir.damage(previous) if held is not None else None  # else: a new run anyway
    if damage:
        print(f"{run_dir.root}: {damage}; running it again from the start", file=sys.stderr, flush=True)
        same_config = False
    if same_config and previous["status"] == "completed" and not cfg.force:
        return {**base, **previous, "status": "skipped", "objective": score(run_dir.eval_rows(), cfg.objective)}
    resume_step = resume_point(run_dir, str(cfg.backend)) if same_config and not cfg.force else None
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
        every = int(cfg.eval.every or max(budget // 10, 1))
        video = eval_video(cfg.eval, run_dir.root / "video", budget, every)
        train_env, eval_env = make_envs(cfg.env, str(cfg.env_name), int(cfg.seed), algo_gamma,
                                        render_mode="rgb_array" if video else None)
        check_spaces(algo_cls, str(cfg.algo_name), str(cfg.env_name), cfg.algo.get("policy"), train_env)
        evaluator = PeriodicEval(eval_env, run_dir, every, int(cfg.eval.episodes), bool(cfg.eval.deterministic),
                                 wall_time_offset=run_dir.checkpoint_wall_time() if resume else 0.0,
                                 seed=int(cfg.seed) + EVAL_SEED_OFFSET, video=video,
                                 on_evaluated=[BestCheckpoint(run_dir, str(cfg.backend), eval_env)])
        job = Job(cfg=cfg, algo_cls=algo_cls, run=run_dir, train_env=train_env, evaluator=evaluator, budget=budget,
                  seed=int(cfg.seed), checkpoint_every=int(cfg.checkpoint.every or every), resume=resume)
        if requested_devices(cfg) > 1:  # ranks 1.. inherit this process's environment when fit starts them
            hand_plan({"run_dir": str(run_dir.root), "resume": resume, "checkpoint_every": job.checkpoint_every})
        model = BACKENDS[str(cfg.backend)](job)
        run_dir.merge_metrics()
        last = evaluator.last_row
        if last is None or int(last["timesteps"]) < model.num_timesteps:
            sync_envs_normalization(train_env, eval_env)  # a lit model has let go of its training env by now
            last = evaluator.evaluate(model)  # the final score is always measured at the end of the budget
        rows = run_dir.eval_rows()
        summary.update(
            status="completed", timesteps=int(model.num_timesteps), final_mean_return=last["mean_return"],
            final_std_return=last["std_return"], final_success_rate=last["success_rate"] or None,
            threshold=cfg.env.get("threshold"), steps_to_threshold=steps_to_threshold(rows, cfg.env.get("threshold")),
            wall_time_s=round(evaluator.wall_time(), 3), fps=last["fps"],
            startup_s=round(evaluator.first_step_at - started, 3) if evaluator.first_step_at else None,
            objective=score(rows, cfg.objective),
        )
    except ConfigError as error:
        summary.update(status="failed", error=str(error), traceback=None)
    except Interrupted as interrupt:  # a checkpoint was written at the current step: the next run resumes there
        step = run_dir.checkpoint_step()
        at = f"at {step} env steps" if step is not None else "before its first checkpoint"
        summary.update(status="interrupted", signal=interrupt.name, timesteps=step,
                       error=f"stopped by {interrupt.name} {at}; rerun the same command to resume")
    except Exception as error:  # a failed run is recorded, never allowed to take the sweep down
        summary.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
    except BaseException:  # KeyboardInterrupt / SystemExit: leave the checkpoint for the next resume
        summary.update(status="interrupted")
        raise
    finally:
        for env in (train_env, eval_env):
            if env is not None:
                env.close()
        finish_loggers()
        summary["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        run_dir.write_summary(summary)
    return summary


def describe(summary: dict[str, Any]) -> str:
    """One line for the console."""
    variant = f", {summary['variant']}" if summary.get("variant") else ""
    name = f"{summary['algo']} on {summary['env']} (seed {summary['seed']}, {summary['backend']}{variant})"
    if summary["status"] in ("failed", "interrupted"):
        return f"{name}: {summary['status'].upper()}: {summary.get('error')}"
    score = f"{summary['final_mean_return']:.1f} +/- {summary['final_std_return']:.1f}"
    threshold = summary.get("threshold")
    solved = ""
    if threshold is not None:
        at = summary.get("steps_to_threshold")
        if at is not None:
            solved = f"; reached {threshold:g} at {at} steps (held for {aggregate.THRESHOLD_WINDOW} evaluations)"
        elif summary["final_mean_return"] >= threshold:  # a late (or lucky) evaluation is not yet "reached"
            solved = f"; {threshold:g} not held for {aggregate.THRESHOLD_WINDOW} evaluations in a row yet"
        else:
            solved = f"; below {threshold:g}"
    done = "already completed, skipped" if summary["status"] == "skipped" else summary["status"]
    return (f"{name}: {done}; final evaluation {score} after {summary['timesteps']} env steps{solved}; "
            f"results in {summary['run_dir']}")
