"""``run(cfg)``: one configured run's life, start to finish, into its run directory, read top-down here.

1. **decide** (``open_run``): the run options checked, the config's own directory (``lit_bench.config.identity``)
   locked (one writer at a time: ``RunDir.lock``) and what it holds read once (``RunDir.held_run``: the run found
   there, the damage to its files), then skip (completed with this config), resume (a checkpoint) or fresh
   (``decide``); a directory that holds another config, or finished work that does not check out, is never
   touched;
2. **prepare**: the checks before anything changes, in one pass (``lit_bench.config.checks.check_before_training``:
   algorithm, hyperparameters, budget, env package, loggers, video, objective, console, processes); then the
   directory is made ready and the ``running`` summary written (``RunDir.make_ready``);
3. **train and evaluate** (``train_and_score``): the envs, the evaluator, the backend (``lit_bench.run.backends``)
   trained to the budget, the final evaluation;
4. **record** (``lit_bench.run.outcome``: ``recorded``, the trained run's ``results``): the summary of how the run
   ended, also when it failed or was stopped, and the console line.

A failed run never raises: its failure is recorded in ``summary.json`` (so that a sweep's other runs carry on) and
returned.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from omegaconf import DictConfig
from stable_baselines3.common.vec_env import sync_envs_normalization

from lit_bench import stats
from lit_bench.config.budget import PLANNED_ENV, budget_warnings
from lit_bench.config.checks import (
    VARIANT_BASE,
    ConfigError,
    check_before_training,
    check_objective,
    check_run_options,
    check_spaces,
    requested_devices,
)
from lit_bench.config.envs import make_envs
from lit_bench.config.hydra_versions import whitelisted
from lit_bench.config.identity import BATCHED, RunIdentity, config_hash, config_id, identify, observation, resolved
from lit_bench.config.trust import code_names
from lit_bench.control import signals
from lit_bench.control.signals import Interrupted
from lit_bench.control.study import trial_hooks
from lit_bench.control.sweep import INVOCATION_ENV
from lit_bench.run.backends import BACKENDS, Job
from lit_bench.run.checkpointing import BestCheckpoint, other_kind_of_checkpoint, resume_point
from lit_bench.run.console import ConsoleProgress, console_mode
from lit_bench.run.evaluation import PeriodicEval, default_every
from lit_bench.run.outcome import describe, failed, recorded, results, stopped_at_once, timestamp
from lit_bench.run.provenance import hydra_output_dir, provenance, task_overrides
from lit_bench.run.ranks import failing_ranks_end_the_run, hand_plan, process_rank, run_rank
from lit_bench.run.video import eval_video
from lit_bench.run.watchdog import StepWatchdog
from lit_bench.store.rundir import HeldRun, RunDir, Untouchable
from lit_sb3.common.seeding import EVAL_SEED_OFFSET


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train, evaluate and record one run; return its summary (``status``: completed, skipped or failed).

    ``objective`` (the score a sweeper gets, see ``lit_bench.stats.objective``) is set for completed and skipped runs.
    """
    if process_rank() > 0:  # a further process of a multi-process run (Lightning started it): trains, writes nothing
        return run_rank(cfg)
    if cfg.get(BATCHED):  # (a group's process trains its batched seeds with open_run and lit_bench.run.batched)
        return failed(
            {"algo": str(cfg.algo_name), "env": str(cfg.env_name), "seed": cfg.seed, "backend": str(cfg.backend)}
            | {"run_dir": None},
            f"{BATCHED}=true: set by a group's process for the seeds it trains as one batched model; train seeds "
            f"together with a sweep (seeds_per_process=auto or N) and leave {BATCHED} unset",
        )
    with contextlib.ExitStack() as held:
        opened = open_run(cfg, held)
        if not isinstance(opened, Opened):
            return opened
        run_dir, summary = opened.run_dir, opened.summary

        def rank_failed(error: str) -> None:
            ended = {**summary, **failed({}, error), "finished_at": timestamp()}
            run_dir.write_summary(ended)
            print(describe(ended), flush=True)

        with signals.on_hard_stop(stopped_at_once(run_dir, summary)):
            return recorded(
                run_dir,
                summary,
                lambda: train_and_score(
                    cfg, run_dir, opened.algo_cls, opened.budget, opened.start, opened.started, rank_failed
                ),
            )


@dataclass
class Opened:
    """A run that trains: its directory made ready for ``start`` and its ``running`` summary written."""

    run_dir: RunDir
    summary: dict[str, Any]
    algo_cls: type
    budget: int
    start: Start
    started: float  # perf_counter when the run began (its start-up time is measured from here)


def open_run(cfg: DictConfig, held: contextlib.ExitStack) -> dict[str, Any] | Opened:
    """A run up to its training: the checks, the lock (entered into ``held``, for the caller to keep while it
    trains), skip / resume / fresh, the directory made ready and the ``running`` summary. Returns the final summary
    of a run that does not train (failed, skipped, damaged, interrupted while waiting for the lock), or the
    :class:`Opened` run (a batched group opens each of its seeds so, then trains them together)."""
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
    base = run_fields(cfg, config, identity)
    hydra_dir = hydra_output_dir()
    if hydra_dir is not None and hydra_dir != identity.root.resolve():
        return failed(
            base,
            f"hydra.run.dir / hydra.sweep.dir: Hydra's job directory {hydra_dir} is not the run's "
            f"{identity.root}; place runs with out_dir= and sweep= instead",
        )
    signals.set_stop_timeout(float(cfg.get("stop_timeout_s") or signals.STOP_TIMEOUT_S))
    # the config is the caller's word (a command line, or run(cfg) from Python): Hydra 1.4 may resolve its targets
    held.enter_context(whitelisted([name for _, kind, name in code_names(config) if kind == "target"]))
    run_dir = RunDir(identity.root)
    try:
        held.enter_context(run_dir.lock(poll=signals.stop_if_pending))
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
    started = time.perf_counter()
    try:
        found = run_dir.held_run()
    except Untouchable as refusal:  # never deleted or rewritten, neither skipped nor resumed
        return failed(base, str(refusal))
    return _open_locked(cfg, config, run_dir, base, found, started)


def run_fields(cfg: DictConfig, config: dict[str, Any], identity: RunIdentity) -> dict[str, Any]:
    """What every summary of this run says about it: names, seed, budget, directory and identity (a seed trained in
    a batched group: also its config's trained ungrouped, which the report shows it as a seed of)."""
    return {
        "algo": str(cfg.algo_name),
        "base": cfg.algo.get(VARIANT_BASE),
        "env": str(cfg.env_name),
        "env_id": config["env"].get("id"),
        "seed": int(cfg.seed),
        "backend": str(cfg.backend),
        "budget": cfg.budget,
        "run_dir": str(identity.root),
        "sweep": str(cfg.sweep),
        "variant": identity.variant,
        "config_id": identity.config_id,
        "config_hash": identity.config_hash,
        "overrides": identity.overrides,
        "observation": observation(config),
        "invocation": os.environ.get(INVOCATION_ENV),
        **(
            {"unbatched_config_id": identity.unbatched.config_id, "unbatched_variant": identity.unbatched.variant}
            if identity.unbatched is not None
            else {}
        ),
    }


def _open_locked(
    cfg: DictConfig, config: dict[str, Any], run_dir: RunDir, base: dict[str, Any], found: HeldRun, started: float
) -> dict[str, Any] | Opened:
    """The locked run from what its directory holds (``found``): skip, resume or fresh, the checks, the directory
    made ready and the ``running`` summary."""
    previous, held = found.summary, found.config
    if held is not None and config_hash(held) != base["config_hash"]:
        # Only possible when the composed defaults changed since that run (or for runs of an older layout).
        return failed(
            base,
            f"{run_dir.root} holds a {(previous or {}).get('status', 'started')} run of another "
            f"config (config_id {config_id(held)}, this one {base['config_id']}); nothing was "
            f"changed: use another sweep= or move it",
        )
    # a completed run is skipped before the checks: a logger it would need only to train again is not required
    batched = bool(cfg.get(BATCHED))
    start = decide(run_dir, found, backend=str(cfg.backend), budget=None, force=bool(cfg.force), batched=batched)
    if start.action == "damaged":  # finished work that does not check out: the user's to look at, never retrained
        assert start.damage is not None
        return {**base, "status": "damaged", "error": left_damaged(run_dir, start.damage), "traceback": None}
    if start.action != "skip":
        try:
            algo_cls, budget = check_before_training(cfg)
        except ConfigError as error:
            return record_config_error(run_dir, failed(base, str(error)), previous)
        other = other_kind_of_checkpoint(run_dir, batched)
        if other is not None and not cfg.force:  # never resumed, never wiped unasked
            return failed(base, other)
        start = decide(run_dir, found, backend=str(cfg.backend), budget=budget, force=bool(cfg.force), batched=batched)
    if start.action == "skip":
        assert previous is not None
        if previous["status"] == "pruned":  # the same config asked again: pruned again, without training
            return {**base, **previous}
        try:
            check_objective(cfg.objective)  # (checked before training too; a skipped run is scored as well)
        except ConfigError as error:
            return failed(base, str(error))  # the completed run is left as it is
        return {
            **base,
            **previous,
            "status": "skipped",
            "objective": stats.objective(found.eval_rows, str(cfg.objective.metric), cfg.objective.get("last")),
            "note": not_retrained(held or {}, config, run_dir),
        }
    torch.set_num_threads(int(cfg.threads))
    if start.damage:
        print(f"{run_dir.root}: {start.damage}; force=true: running it again", file=sys.stderr, flush=True)
    warn_budget(cfg, budget)
    summary = {**base, "status": "running", "resumed_from": start.step, **provenance(config["env"])}
    resume_at = start.step if start.action == "resume" else None
    run_dir.make_ready(resume_at, int(config["env"]["n_envs"]), config, task_overrides(), summary)
    return Opened(run_dir, summary, algo_cls, budget, start, started)


def record_config_error(run_dir: RunDir, summary: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """A config mistake found before training: recorded in the run directory unless it holds a completed run."""
    if not (previous and previous.get("status") == "completed"):
        try:
            run_dir.root.mkdir(parents=True, exist_ok=True)
            run_dir.write_summary(summary)
        except OSError:
            pass  # out_dir itself is the mistake: the returned summary is the only record
    return summary


# ---- decide: skip, resume or fresh, from what the run's directory holds


@dataclass(frozen=True)
class Start:
    """How a run begins in its directory: ``skip`` (completed or pruned with this config), ``resume`` (from the
    checkpoint at ``step``), ``fresh`` (nothing usable there; with ``force``, ``damage`` says what was wrong with the
    run found there) or ``damaged`` (a completed run whose files do not match its record: left for the user)."""

    action: Literal["skip", "resume", "fresh", "damaged"]
    step: int | None = None
    damage: str | None = None


def decide(
    run_dir: RunDir, found: HeldRun, *, backend: str, budget: int | None, force: bool, batched: bool = False
) -> Start:
    """Skip, resume or start afresh, from what the directory holds (``found``: its run's summary, config, already
    known to be this run's, and damage; ``budget`` None: only whether to skip is known, never ``resume``;
    ``batched``: a seed of a batched group, resumed from its own checkpoint file)."""
    previous, held = found.summary, found.config
    if found.damage:  # finished work is never trained over unasked: force=true does
        return Start("fresh" if force else "damaged", damage=found.damage)
    pruned = previous is not None and previous["status"] == "pruned"
    if held is None or (force and not pruned):
        return Start("fresh")
    if previous is None:  # its summary was lost (e.g. a full disk): what its checkpoint holds is still its own
        step = resume_point(run_dir, backend, batched) if budget is not None else None
        return Start("resume", step) if step is not None else Start("fresh")
    if previous["status"] == "completed" or (pruned and not force):
        return Start("skip")  # force=true continues a pruned run from its checkpoint
    step = resume_point(run_dir, backend, batched) if budget is not None else None  # at the budget: killed in the final
    return Start("resume", step) if step is not None else Start("fresh")  # evaluation, which alone is redone


def left_damaged(run_dir: RunDir, damage: str) -> str:
    """The one line of a completed run whose files do not match what it recorded."""
    return (
        f"{run_dir.root}: damaged: {damage}; left as it is (nothing was changed): "
        f"restore or move it, or force=true to train it again"
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
        instead.append(f"a video of its final model: lit-bench enjoy {run_dir.root} --video {run_dir.final_video}")
    return (
        f"not trained again for {shown} (how a run is watched, not what it computes); "
        f"{'; '.join(instead)}; force=true retrains it into the same directory"
    )


# ---- prepare: the budget's warnings (the checks: lit_bench.config.checks; the directory: RunDir.make_ready)


def warn_budget(cfg: DictConfig, budget: int) -> None:
    """The budget's warning lines (``config.budget.budget_warnings``: a rollout the budget overshoots, ...), unless
    the sweep's plan printed them already (once per sweep, not once per run)."""
    if not os.environ.get(PLANNED_ENV):
        for line in budget_warnings(cfg, budget):
            print(f"warning: {line}", file=sys.stderr, flush=True)


# ---- train and evaluate: the envs, the evaluator, the backend trained to the budget, the final evaluation


def train_and_score(
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
    return results(cfg, run_dir, evaluator, last, int(model.num_timesteps), budget, started)


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
    resume = start.action == "resume"
    every = int(cfg.eval.every or default_every(cfg, budget))
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
