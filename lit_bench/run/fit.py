"""Training one run: its envs, evaluator, checkpoints and backend, trained to the budget, evaluated at the end,
and the results its summary records."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig
from stable_baselines3.common.vec_env import sync_envs_normalization

from lit_bench import stats
from lit_bench.config.checks import check_spaces
from lit_bench.config.envs import EVAL_SEED_OFFSET, make_envs
from lit_bench.run.best import BestCheckpoint
from lit_bench.run.console import ConsoleProgress, console_mode
from lit_bench.run.evaluation import PeriodicEval, default_every
from lit_bench.run.ranks import failing_ranks_end_the_run, hand_plan, requested_devices
from lit_bench.run.trial import trial_hooks
from lit_bench.run.video import eval_video
from lit_bench.run.watchdog import StepWatchdog
from lit_bench.store.rundir import RunDir

if TYPE_CHECKING:
    from lit_bench.run.train import Start


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


def results(
    cfg: DictConfig,
    run_dir: RunDir,
    evaluator: PeriodicEval,
    last: dict[str, Any],
    timesteps: int,
    budget: int,
    started: float,
) -> dict[str, Any]:
    """A trained run's results for its summary, from its evaluator and final evaluation's row (``last``)."""
    if timesteps < budget:  # e.g. a backend or an option that stopped training early: not a result
        return dict(
            status="failed",
            timesteps=timesteps,
            traceback=None,
            error=f"trained {timesteps} of the budget's {budget} env steps; not a completed run",
        )
    rows = run_dir.eval_rows()
    at = stats.steps_to_threshold(
        [float(r["timesteps"]) for r in rows], [float(r["mean_return"]) for r in rows], cfg.env.get("threshold")
    )
    return dict(
        status="completed",
        timesteps=timesteps,
        final_mean_return=last["mean_return"],
        final_std_return=last["std_return"],
        final_success_rate=last["success_rate"] or None,
        threshold=cfg.env.get("threshold"),
        steps_to_threshold=None if math.isnan(at) else int(at),  # JSON: null
        wall_time_s=round(evaluator.wall_time(), 3),
        fps=last["fps"],
        cpu_time_s=round(evaluator.train_cpu_s, 3),
        cpu_fps=round(evaluator.cpu_fps, 1),
        startup_s=round(evaluator.first_step_at - started, 3) if evaluator.first_step_at else None,
        objective=stats.objective(rows, str(cfg.objective.metric), cfg.objective.get("last")),
        **run_dir.written(),
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
