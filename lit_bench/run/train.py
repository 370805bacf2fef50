"""``run(cfg)``: one configured run, start to finish, into its run directory.

The directory is the config's own (``lit_bench.config.identity``) and has one writer at a time (``RunDir.lock``).
Skips a run that already completed with the same config, resumes one that has a checkpoint, never touches a directory
that holds another config, and never raises for a failed run: the failure is recorded in ``summary.json`` (so that a
sweep's other runs carry on) and returned.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
import yaml
from omegaconf import DictConfig
from stable_baselines3.common.vec_env import sync_envs_normalization

from lit_bench.config.checks import (
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
from lit_bench.config.envs import EVAL_SEED_OFFSET, make_envs, require_package
from lit_bench.config.identity import RunIdentity, config_hash, config_id, identify, resolved, run_path
from lit_bench.control.signals import Interrupted
from lit_bench.control.sweep import INVOCATION_ENV
from lit_bench.run.best import BestCheckpoint
from lit_bench.run.checkpointing import resume_point
from lit_bench.run.evaluation import PeriodicEval
from lit_bench.run.loggers import check_loggers, finish_loggers
from lit_bench.run.objective import check_objective, score
from lit_bench.run.provenance import hydra_output_dir, provenance, requeued_by_scheduler, task_overrides
from lit_bench.run.ranks import (
    check_processes,
    failing_ranks_end_the_run,
    hand_plan,
    process_rank,
    requested_devices,
    run_rank,
)
from lit_bench.run.trial import Pruned, trial_hooks
from lit_bench.run.video import check_eval_video, eval_video
from lit_bench.store import scores
from lit_bench.store.format import format_problem
from lit_bench.store.rundir import RunDir, atomic_write_text


@dataclass(frozen=True)
class Start:
    """How a run begins in its directory: ``skip`` (completed or pruned with this config), ``resume`` (from the
    checkpoint at ``step``) or ``fresh`` (nothing usable there; ``damage`` says what was wrong with a run found
    there)."""

    action: Literal["skip", "resume", "fresh"]
    step: int | None = None
    damage: str | None = None


def decide(run_dir: RunDir, previous: dict[str, Any] | None, held: dict[str, Any] | None, *, backend: str,
           budget: int, force: bool) -> Start:
    """Skip, resume or start afresh, from what the directory holds (``previous``: its summary, ``held``: its config,
    already known to be this run's)."""
    damage = run_dir.damage(previous) if held is not None else None  # no config: a new run anyway
    if damage:
        return Start("fresh", damage=damage)
    pruned = previous is not None and previous["status"] == "pruned"
    if held is None or previous is None or (force and not pruned):
        return Start("fresh")
    if previous["status"] == "completed" or (pruned and not force):
        return Start("skip")  # force=true continues a pruned run from its checkpoint
    step = resume_point(run_dir, backend)
    return Start("resume", step) if step is not None and step < budget else Start("fresh")


def failed(base: dict[str, Any], error: str, traceback: str | None = None) -> dict[str, Any]:
    return {**base, "status": "failed", "error": error, "traceback": traceback}


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


def run_fields(cfg: DictConfig, config: dict[str, Any], identity: RunIdentity, run_dir: RunDir) -> dict[str, Any]:
    """What every summary of this run says about it: names, seed, budget, directory and identity."""
    return {
        "algo": str(cfg.algo_name), "env": str(cfg.env_name), "env_id": config["env"].get("id"),
        "seed": int(cfg.seed), "backend": str(cfg.backend), "budget": cfg.budget, "run_dir": str(run_dir.root),
        "sweep": str(cfg.sweep), "variant": identity.variant, "config_id": identity.config_id,
        "config_hash": identity.config_hash, "overrides": identity.overrides,
        "invocation": os.environ.get(INVOCATION_ENV),
    }


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train, evaluate and record one run; return its summary (``status``: completed, skipped or failed).

    ``objective`` (the score a sweeper gets, see ``lit_bench.run.objective``) is set for completed and skipped runs.
    """
    if process_rank() > 0:  # a further process of a multi-process run (Lightning started it): trains, writes nothing
        return run_rank(cfg, _prepare)
    try:
        check_run_options(cfg)  # seed, threads, ... shape the run directory: checked before it is named
    except ConfigError as error:
        return failed({"algo": str(cfg.algo_name), "env": str(cfg.env_name), "seed": cfg.seed,
                       "backend": str(cfg.backend), "run_dir": None}, str(error))
    config = resolved(cfg)
    identity = identify(config)
    run_dir = RunDir(run_path(config, identity))
    base = run_fields(cfg, config, identity, run_dir)
    hydra_dir = hydra_output_dir()
    if hydra_dir is not None and hydra_dir != run_dir.root.resolve():
        return failed(base, f"hydra.run.dir / hydra.sweep.dir: Hydra's job directory {hydra_dir} is not the run's "
                            f"{run_dir.root}; place runs with out_dir= and sweep= instead")
    with run_dir.lock():
        return _run_locked(cfg, config, run_dir, base)


def _run_locked(cfg: DictConfig, config: dict[str, Any], run_dir: RunDir, base: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    previous, held = run_dir.read_summary(), run_dir.read_config()
    problem = format_problem(previous) if previous is not None else None
    if problem:  # written by a newer lit_bench: neither skipped, resumed nor replaced by this one
        return failed(base, f"{run_dir.summary}: {problem}; nothing was changed")
    if held is not None and config_hash(held) != base["config_hash"]:
        # Only possible when the composed defaults changed since that run (or for runs of an older layout).
        return failed(base, f"{run_dir.root} holds a {(previous or {}).get('status', 'started')} run of another "
                            f"config (config_id {config_id(held)}, this one {base['config_id']}); nothing was "
                            f"changed: use another sweep= or move it")
    try:
        algo_cls, budget = _prepare(cfg)
    except ConfigError as error:
        return _record_config_error(run_dir, failed(base, str(error)), previous)
    torch.set_num_threads(int(cfg.threads))
    start = decide(run_dir, previous, held, backend=str(cfg.backend), budget=budget, force=bool(cfg.force))
    if start.action == "skip":
        assert previous is not None
        if previous["status"] == "pruned":  # the same config asked again: pruned again, without training
            return {**base, **previous}
        return {**base, **previous, "status": "skipped", "objective": score(run_dir.eval_rows(), cfg.objective)}
    _open(run_dir, config, start)
    summary = {**base, "status": "running", "resumed_from": start.step, **provenance()}
    run_dir.write_summary(summary)

    def rank_failed(error: str) -> None:
        ended = {**summary, **failed({}, error), "finished_at": _now()}
        run_dir.write_summary(ended)
        print(describe(ended), flush=True)

    return _recorded(run_dir, summary,
                     lambda: _train_and_score(cfg, run_dir, algo_cls, budget, start, started, rank_failed))


def _record_config_error(run_dir: RunDir, summary: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """A config mistake found before training: recorded in the run directory unless it holds a completed run."""
    if not (previous and previous.get("status") == "completed"):
        try:
            run_dir.root.mkdir(parents=True, exist_ok=True)
            run_dir.write_summary(summary)
        except OSError:
            pass  # out_dir itself is the mistake: the returned summary is the only record
    return summary


def _open(run_dir: RunDir, config: dict[str, Any], start: Start) -> None:
    """Make the directory ready for ``start``: cleared, or cut back to the checkpoint; then this run's config."""
    if start.damage:
        print(f"{run_dir.root}: {start.damage}; running it again from the start", file=sys.stderr, flush=True)
    if start.action == "resume":
        assert start.step is not None
        run_dir.truncate_eval(start.step)
        run_dir.stash_metrics(start.step)
    else:
        run_dir.wipe()
    atomic_write_text(run_dir.config, yaml.safe_dump(config, sort_keys=False))
    atomic_write_text(run_dir.overrides, yaml.safe_dump(task_overrides()))


def _train_and_score(cfg: DictConfig, run_dir: RunDir, algo_cls: type, budget: int, start: Start,
                     started: float, on_rank_failure: Callable[[str], None]) -> dict[str, Any]:
    """Train to the budget (evaluating and checkpointing on the way), evaluate at the end; the summary's results
    (``on_rank_failure``: records the run as failed when a further process of a multi-process run fails)."""
    from lit_bench.run.backends import BACKENDS, Job

    resume = start.action == "resume"
    every = int(cfg.eval.every or max(budget // 10, 1))
    video = eval_video(cfg.eval, run_dir.video, budget, every)
    train_env, eval_env = make_envs(cfg.env, str(cfg.env_name), int(cfg.seed), cfg.algo.get("gamma"),
                                    render_mode="rgb_array" if video else None)
    try:
        check_spaces(algo_cls, str(cfg.algo_name), str(cfg.env_name), cfg.algo.get("policy"), train_env)
        evaluator = PeriodicEval(eval_env, run_dir, every, int(cfg.eval.episodes), bool(cfg.eval.deterministic),
                                 wall_time_offset=run_dir.checkpoint_wall_time() if resume else 0.0,
                                 seed=int(cfg.seed) + EVAL_SEED_OFFSET, video=video,
                                 on_evaluated=[BestCheckpoint(run_dir, str(cfg.backend), eval_env),
                                               *trial_hooks(cfg, run_dir)])
        job = Job(cfg=cfg, algo_cls=algo_cls, run=run_dir, train_env=train_env, evaluator=evaluator, budget=budget,
                  seed=int(cfg.seed), checkpoint_every=int(cfg.checkpoint.every or every), resume=resume)
        processes = requested_devices(cfg)
        if processes > 1:  # ranks 1.. inherit this process's environment when fit starts them
            hand_plan({"run_dir": str(run_dir.root), "resume": resume, "checkpoint_every": job.checkpoint_every})
        with failing_ranks_end_the_run(on_rank_failure) if processes > 1 else contextlib.nullcontext():
            model = BACKENDS[str(cfg.backend)](job)
        run_dir.merge_metrics()
        last = evaluator.last_row
        if last is None or int(last["timesteps"]) < model.num_timesteps:
            sync_envs_normalization(train_env, eval_env)  # a lit model has let go of its training env by now
            last = evaluator.evaluate(model)  # the final score is always measured at the end of the budget
    finally:
        train_env.close()
        eval_env.close()
    rows = run_dir.eval_rows()
    at = scores.steps_to_threshold([float(r["timesteps"]) for r in rows], [float(r["mean_return"]) for r in rows],
                                      cfg.env.get("threshold"))
    return dict(
        status="completed", timesteps=int(model.num_timesteps), final_mean_return=last["mean_return"],
        final_std_return=last["std_return"], final_success_rate=last["success_rate"] or None,
        threshold=cfg.env.get("threshold"), steps_to_threshold=None if math.isnan(at) else int(at),  # JSON: null
        wall_time_s=round(evaluator.wall_time(), 3), fps=last["fps"],
        startup_s=round(evaluator.first_step_at - started, 3) if evaluator.first_step_at else None,
        objective=score(rows, cfg.objective),
    )


def _recorded(run_dir: RunDir, summary: dict[str, Any], train: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``train`` and record how it ended in ``summary.json``: completed, failed (never raised: a sweep's other
    runs carry on), interrupted (its checkpoint left for the next run to resume from) or pruned (an Optuna pruner
    stopped it; its checkpoint is kept, ``force=true`` continues it)."""
    try:
        summary.update(train())
    except ConfigError as error:
        summary.update(status="failed", error=str(error), traceback=None)
    except Interrupted as interrupt:  # a checkpoint was written at the current step: the next run resumes there
        step = run_dir.checkpoint_step()
        at = f"at {step} env steps" if step is not None else "before its first checkpoint"
        then = ("submitit requeues the job, which resumes there" if requeued_by_scheduler(interrupt.name)
                else "rerun the same command to resume")
        summary.update(status="interrupted", signal=interrupt.name, timesteps=step,
                       error=f"stopped by {interrupt.name} {at}; {then}")
    except Pruned as pruned:
        summary.update(status="pruned", pruned_at=pruned.step, timesteps=run_dir.checkpoint_step(), objective=None,
                       error=None, wall_time_s=run_dir.checkpoint_wall_time())
    except Exception as error:  # a failed run is recorded, never allowed to take the sweep down
        summary.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
    except BaseException:  # KeyboardInterrupt / SystemExit: leave the checkpoint for the next resume
        summary.update(status="interrupted")
        raise
    finally:
        finish_loggers()
        summary["finished_at"] = _now()
        run_dir.write_summary(summary)
    return summary


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def describe(summary: dict[str, Any]) -> str:
    """One line for the console."""
    variant = f", {summary['variant']}" if summary.get("variant") else ""
    name = f"{summary['algo']} on {summary['env']} (seed {summary['seed']}, {summary['backend']}{variant})"
    if summary["status"] == "pruned":
        return (f"{name}: PRUNED after the evaluation at {summary.get('pruned_at')} env steps; checkpoint at "
                f"{summary.get('timesteps')} kept in {summary['run_dir']}")
    if summary["status"] in ("failed", "interrupted"):
        return f"{name}: {summary['status'].upper()}: {summary.get('error')}"
    score = f"{summary['final_mean_return']:.1f} +/- {summary['final_std_return']:.1f}"
    threshold = summary.get("threshold")
    solved = ""
    if threshold is not None:
        at = summary.get("steps_to_threshold")
        if at is not None:
            solved = f"; reached {threshold:g} at {at} steps (held for {scores.THRESHOLD_WINDOW} evaluations)"
        elif summary["final_mean_return"] >= threshold:  # a late (or lucky) evaluation is not yet "reached"
            solved = f"; {threshold:g} not held for {scores.THRESHOLD_WINDOW} evaluations in a row yet"
        else:
            solved = f"; below {threshold:g}"
    done = "already completed, skipped" if summary["status"] == "skipped" else summary["status"]
    return (f"{name}: {done}; final evaluation {score} after {summary['timesteps']} env steps{solved}; "
            f"results in {summary['run_dir']}")
