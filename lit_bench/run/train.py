"""``run(cfg)``: one configured run, start to finish, into its run directory.

The directory is the config's own (``lit_bench.config.identity``) and has one writer at a time (``RunDir.lock``).
Skips a run that already completed with the same config, resumes one that has a checkpoint, never touches a directory
that holds another config, and never raises for a failed run: the failure is recorded in ``summary.json`` (so that a
sweep's other runs carry on) and returned.
"""

from __future__ import annotations

import contextlib
import json
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
    VARIANT_BASE,
    ConfigError,
    algorithm_class,
    check_budget,
    check_declared_action_space,
    check_hyperparameter_values,
    check_hyperparameters,
    check_precision,
    check_run_options,
    check_spaces,
    check_trainer_options,
)
from lit_bench.config.envs import EVAL_SEED_OFFSET, make_envs, require_package
from lit_bench.config.identity import RunIdentity, config_hash, config_id, identify, observation, resolved, run_path
from lit_bench.control import signals
from lit_bench.control.signals import Interrupted
from lit_bench.control.sweep import INVOCATION_ENV
from lit_bench.run.best import BestCheckpoint
from lit_bench.run.checkpointing import resume_point
from lit_bench.run.console import ConsoleProgress, choose_mode
from lit_bench.run.evaluation import Diverged, PeriodicEval
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
from lit_bench.run.watchdog import EnvTimeout, StepWatchdog
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


def decide(
    run_dir: RunDir,
    previous: dict[str, Any] | None,
    held: dict[str, Any] | None,
    *,
    backend: str,
    budget: int | None,
    force: bool,
) -> Start:
    """Skip, resume or start afresh, from what the directory holds (``previous``: its summary, ``held``: its config,
    already known to be this run's; ``budget`` None: only whether to skip is known, never ``resume``)."""
    damage = run_dir.damage(previous) if held is not None else None  # no config: a new run anyway
    if damage:
        return Start("fresh", damage=damage)
    pruned = previous is not None and previous["status"] == "pruned"
    if held is None or (force and not pruned):
        return Start("fresh")
    if previous is None:  # its summary was lost (e.g. a full disk): what its checkpoint holds is still its own
        step = resume_point(run_dir, backend) if budget is not None else None
        return Start("resume", step) if step is not None else Start("fresh")
    if previous["status"] == "completed" or (pruned and not force):
        return Start("skip")  # force=true continues a pruned run from its checkpoint
    step = resume_point(run_dir, backend) if budget is not None else None  # at the budget: killed in the final
    return Start("resume", step) if step is not None else Start("fresh")  # evaluation, which alone is redone


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


def run_fields(cfg: DictConfig, config: dict[str, Any], identity: RunIdentity, run_dir: RunDir) -> dict[str, Any]:
    """What every summary of this run says about it: names, seed, budget, directory and identity."""
    return {
        "algo": str(cfg.algo_name),
        "base": cfg.algo.get(VARIANT_BASE),
        "env": str(cfg.env_name),
        "env_id": config["env"].get("id"),
        "seed": int(cfg.seed),
        "backend": str(cfg.backend),
        "budget": cfg.budget,
        "run_dir": str(run_dir.root),
        "sweep": str(cfg.sweep),
        "variant": identity.variant,
        "config_id": identity.config_id,
        "config_hash": identity.config_hash,
        "overrides": identity.overrides,
        "observation": observation(config),
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
        return failed(
            {
                "algo": str(cfg.algo_name),
                "env": str(cfg.env_name),
                "seed": cfg.seed,
                "backend": str(cfg.backend),
                "run_dir": None,
            },
            str(error),
        )
    config = resolved(cfg)
    identity = identify(config)
    run_dir = RunDir(run_path(config, identity))
    base = run_fields(cfg, config, identity, run_dir)
    hydra_dir = hydra_output_dir()
    if hydra_dir is not None and hydra_dir != run_dir.root.resolve():
        return failed(
            base,
            f"hydra.run.dir / hydra.sweep.dir: Hydra's job directory {hydra_dir} is not the run's "
            f"{run_dir.root}; place runs with out_dir= and sweep= instead",
        )
    signals.set_stop_timeout(float(cfg.get("stop_timeout_s") or signals.STOP_TIMEOUT_S))
    with contextlib.ExitStack() as locked:
        try:
            locked.enter_context(run_dir.lock(poll=signals.stop_if_pending))
        except OSError as error:  # e.g. a symlink where the lock goes, or a directory that cannot be made
            return failed(base, f"{run_dir.root}: cannot lock the run directory ({error.strerror or error})")
        except Interrupted as interrupt:  # while waiting for another process's run: nothing was changed
            return {
                **base,
                "status": "interrupted",
                "signal": interrupt.name,
                "timesteps": None,
                "error": f"stopped by {interrupt.name} while waiting for the run's lock; nothing was changed",
            }
        return _run_locked(cfg, config, run_dir, base)


def _run_locked(cfg: DictConfig, config: dict[str, Any], run_dir: RunDir, base: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    unproven = run_dir.unproven()
    if unproven is not None:  # never deleted or rewritten: it may be a finished run, or not the harness's at all
        return failed(
            base,
            f"{run_dir.root}: {unproven}, so it cannot be shown to be a run of this config; "
            f"nothing was changed: move it, or use another sweep=",
        )
    previous, held = run_dir.read_summary(), run_dir.read_config()
    problem = format_problem(previous) if previous is not None else None
    if problem:  # written by a newer lit_bench: neither skipped, resumed nor replaced by this one
        return failed(base, f"{run_dir.summary}: {problem}; nothing was changed")
    if held is not None and config_hash(held) != base["config_hash"]:
        # Only possible when the composed defaults changed since that run (or for runs of an older layout).
        return failed(
            base,
            f"{run_dir.root} holds a {(previous or {}).get('status', 'started')} run of another "
            f"config (config_id {config_id(held)}, this one {base['config_id']}); nothing was "
            f"changed: use another sweep= or move it",
        )
    # a completed run is skipped before the checks: a logger it would need only to train again is not required
    start = decide(run_dir, previous, held, backend=str(cfg.backend), budget=None, force=bool(cfg.force))
    if start.action != "skip":
        try:
            algo_cls, budget = _prepare(cfg)
        except ConfigError as error:
            return _record_config_error(run_dir, failed(base, str(error)), previous)
        start = decide(run_dir, previous, held, backend=str(cfg.backend), budget=budget, force=bool(cfg.force))
    if start.action == "skip":
        assert previous is not None
        if previous["status"] == "pruned":  # the same config asked again: pruned again, without training
            return {**base, **previous}
        return {
            **base,
            **previous,
            "status": "skipped",
            "objective": score(run_dir.eval_rows(), cfg.objective),
            "note": not_retrained(held or {}, config, run_dir),
        }
    torch.set_num_threads(int(cfg.threads))
    _open(run_dir, config, start)
    warn_overshoot(cfg, budget)
    summary = {**base, "status": "running", "resumed_from": start.step, **provenance()}
    run_dir.write_summary(summary)

    def rank_failed(error: str) -> None:
        ended = {**summary, **failed({}, error), "finished_at": _now()}
        run_dir.write_summary(ended)
        print(describe(ended), flush=True)

    with signals.on_hard_stop(_stopped_at_once(run_dir, summary)):
        return _recorded(
            run_dir, summary, lambda: _train_and_score(cfg, run_dir, algo_cls, budget, start, started, rank_failed)
        )


def _stopped_at_once(run_dir: RunDir, summary: dict[str, Any]) -> Callable[[str, str, str | None], None]:
    """What a hard stop (a second signal, ``stop_timeout_s``, the env watchdog) records before the process exits:
    the run's status and why, never ``running``; the last checkpoint stays the one to resume from."""

    def record(status: str, why: str, signal_name: str | None) -> None:
        step = run_dir.checkpoint_step()
        kept = f"its checkpoint at {step} env steps is kept" if step is not None else "it had no checkpoint yet"
        resume = "; rerun the same command to resume" if status == "interrupted" else ""
        run_dir.write_summary(
            {
                **summary,
                "status": status,
                "signal": signal_name,
                "timesteps": step,
                "error": f"{why}: stopped at once, {kept}{resume}",
                "traceback": None,
                "finished_at": _now(),
            }
        )

    return record


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


def not_retrained(held: dict[str, Any], config: dict[str, Any], run_dir: RunDir) -> str | None:
    """What a skipped run does instead of training again for observation settings its completed run did not have
    (None: it had the same)."""
    ours, theirs = observation(config), observation(held)
    changed = [key for key in ours if key != "console" and ours[key] != theirs.get(key)]  # (the console: no note)
    if not changed:
        return None
    shown = ", ".join(f"{key}={json.dumps(ours[key], default=str, separators=(',', ':'))}" for key in changed)
    instead = [f"its metrics are in {run_dir.metrics_csv}"]
    if config.get("eval", {}).get("video") and not held.get("eval", {}).get("video"):
        instead.append(
            f"a video of its final model: python -m lit_bench.enjoy {run_dir.root} --video {run_dir.final_video}"
        )
    return (
        f"not trained again for {shown} (how a run is watched, not what it computes); "
        f"{'; '.join(instead)}; force=true retrains it into the same directory"
    )


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
        run_dir.truncate_monitor(start.step, int(config["env"]["n_envs"]))
    else:
        run_dir.wipe()
    atomic_write_text(run_dir.config, yaml.safe_dump(config, sort_keys=False))
    atomic_write_text(run_dir.overrides, yaml.safe_dump(task_overrides()))


def _train_and_score(
    cfg: DictConfig,
    run_dir: RunDir,
    algo_cls: type,
    budget: int,
    start: Start,
    started: float,
    on_rank_failure: Callable[[str], None],
) -> dict[str, Any]:
    """Train to the budget (evaluating and checkpointing on the way), evaluate at the end; the summary's results
    (``on_rank_failure``: records the run as failed when a further process of a multi-process run fails)."""
    watchdog = StepWatchdog(float(cfg.step_timeout_s)) if cfg.get("step_timeout_s") else None
    with watchdog or contextlib.nullcontext():
        model, evaluator, last = _train(cfg, run_dir, algo_cls, budget, start, watchdog, on_rank_failure)
    if model.num_timesteps < budget:  # e.g. a backend or an option that stopped training early: not a result
        return dict(
            status="failed",
            timesteps=int(model.num_timesteps),
            traceback=None,
            error=f"trained {model.num_timesteps} of the budget's {budget} env steps; not a completed run",
        )
    rows = run_dir.eval_rows()
    at = scores.steps_to_threshold(
        [float(r["timesteps"]) for r in rows], [float(r["mean_return"]) for r in rows], cfg.env.get("threshold")
    )
    return dict(
        status="completed",
        timesteps=int(model.num_timesteps),
        final_mean_return=last["mean_return"],
        final_std_return=last["std_return"],
        final_success_rate=last["success_rate"] or None,
        threshold=cfg.env.get("threshold"),
        steps_to_threshold=None if math.isnan(at) else int(at),  # JSON: null
        wall_time_s=round(evaluator.wall_time(), 3),
        fps=last["fps"],
        startup_s=round(evaluator.first_step_at - started, 3) if evaluator.first_step_at else None,
        objective=score(rows, cfg.objective),
    )


def _train(
    cfg: DictConfig,
    run_dir: RunDir,
    algo_cls: type,
    budget: int,
    start: Start,
    watchdog: StepWatchdog | None,
    on_rank_failure: Callable[[str], None],
) -> tuple[Any, PeriodicEval, dict[str, Any]]:
    """Build the envs, train, evaluate at the end: the model, its evaluator and the final evaluation's row."""
    from lit_bench.run.backends import BACKENDS, Job

    resume = start.action == "resume"
    every = int(cfg.eval.every or max(budget // 10, 1))
    video = eval_video(cfg.eval, run_dir.video, budget, every)
    train_env, eval_env = make_envs(
        cfg.env,
        str(cfg.env_name),
        int(cfg.seed),
        cfg.algo.get("gamma"),
        render_mode="rgb_array" if video else None,
        monitor_dir=str(run_dir.monitor),
        append_monitor=resume,
        outer=watchdog.wrap if watchdog is not None else None,
    )
    try:
        check_spaces(algo_cls, str(cfg.algo_name), str(cfg.env_name), cfg.algo.get("policy"), train_env)
        progress = ConsoleProgress(
            f"{cfg.algo_name} {cfg.env_name} seed {cfg.seed}",
            budget,
            every,
            console_mode(cfg),
            float((cfg.get("console") or {}).get("heartbeat_s", 60)),
        )
        evaluator = PeriodicEval(
            eval_env,
            run_dir,
            every,
            int(cfg.eval.episodes),
            bool(cfg.eval.deterministic),
            wall_time_offset=run_dir.checkpoint_wall_time() if resume else 0.0,
            seed=int(cfg.seed) + EVAL_SEED_OFFSET,
            video=video,
            on_evaluated=[BestCheckpoint(run_dir, str(cfg.backend), eval_env), *trial_hooks(cfg, run_dir)],
            progress=progress,
        )
        job = Job(
            cfg=cfg,
            algo_cls=algo_cls,
            run=run_dir,
            train_env=train_env,
            evaluator=evaluator,
            budget=budget,
            seed=int(cfg.seed),
            checkpoint_every=int(cfg.checkpoint.every or every),
            resume=resume,
        )
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
        if "progress" in locals():
            progress.close()
        train_env.close()
        eval_env.close()
    return model, evaluator, last


def _recorded(run_dir: RunDir, summary: dict[str, Any], train: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``train`` and record how it ended in ``summary.json``: completed, failed (never raised: a sweep's other
    runs carry on), interrupted (its checkpoint left for the next run to resume from) or pruned (an Optuna pruner
    stopped it; its checkpoint is kept, ``force=true`` continues it)."""
    try:
        summary.update(train())
    except (ConfigError, Diverged, EnvTimeout) as error:
        summary.update(status="failed", error=str(error), traceback=None)
    except Interrupted as interrupt:  # a checkpoint was written at the current step: the next run resumes there
        step = run_dir.checkpoint_step()
        at = f"at {step} env steps" if step is not None else "before its first checkpoint"
        then = (
            "submitit requeues the job, which resumes there"
            if requeued_by_scheduler(interrupt.name)
            else "rerun the same command to resume"
        )
        summary.update(
            status="interrupted",
            signal=interrupt.name,
            timesteps=step,
            error=f"stopped by {interrupt.name} {at}; {then}",
        )
    except Pruned as pruned:
        summary.update(
            status="pruned",
            pruned_at=pruned.step,
            timesteps=run_dir.checkpoint_step(),
            objective=None,
            error=None,
            wall_time_s=run_dir.checkpoint_wall_time(),
        )
    except Exception as error:  # a failed run is recorded, never allowed to take the sweep down
        summary.update(status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
    except BaseException:  # KeyboardInterrupt / SystemExit: leave the checkpoint for the next resume
        summary.update(status="interrupted")
        raise
    finally:
        finish_loggers()
        summary["finished_at"] = _now()
        _write_final_summary(run_dir, summary)
    return summary


def _write_final_summary(run_dir: RunDir, summary: dict[str, Any]) -> None:
    """Record how the run ended, also on a full disk: the error that ended the run stays the one reported (with a
    note), and summary.json never stays ``running``. Second try: the ``running`` summary is removed first (it frees
    the space the new one needs; a run without summary.json still resumes from its checkpoint)."""
    try:
        run_dir.write_summary(summary)
        return
    except OSError as error:
        note = f"summary.json could not be written ({error.strerror or error})"
    if summary.get("status") == "completed":  # its results are on disk, but not its record: not a completed run
        summary.update(status="failed", error=f"completed, but {note}")
    else:
        summary["error"] = f"{summary.get('error')}; {note}"
    with contextlib.suppress(OSError):
        run_dir.summary.unlink(missing_ok=True)
        run_dir.write_summary({**summary, "traceback": None})


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def describe(summary: dict[str, Any]) -> str:
    """One line for the console."""
    variant = f", {summary['variant']}" if summary.get("variant") else ""
    name = f"{summary['algo']} on {summary['env']} (seed {summary['seed']}, {summary['backend']}{variant})"
    if summary["status"] == "pruned":
        return (
            f"{name}: PRUNED after the evaluation at {summary.get('pruned_at')} env steps; checkpoint at "
            f"{summary.get('timesteps')} kept in {summary['run_dir']}"
        )
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
    note = f"; {summary['note']}" if summary.get("note") else ""
    return (
        f"{name}: {done}; final evaluation {score} after {summary['timesteps']} env steps{solved}; "
        f"results in {summary['run_dir']}{note}"
    )
