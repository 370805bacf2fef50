"""A run's ``summary.json`` record: the fields every summary has, how the run ended (completed, failed,
interrupted, pruned, stopped at once; also on a full disk) and the one console line that says it."""

from __future__ import annotations

import contextlib
import math
import time
import traceback
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig

from lit_bench import stats
from lit_bench.config.checks import ConfigError
from lit_bench.control.signals import Interrupted
from lit_bench.control.study import Pruned
from lit_bench.run.evaluation import Diverged, PeriodicEval
from lit_bench.run.loggers import finish_loggers
from lit_bench.run.provenance import requeued_by_scheduler
from lit_bench.run.watchdog import EnvTimeout
from lit_bench.store.rundir import RunDir


def failed(base: dict[str, Any], error: str, traceback: str | None = None) -> dict[str, Any]:
    return {**base, "status": "failed", "error": error, "traceback": traceback}


def stopped_at_once(run_dir: RunDir, summary: dict[str, Any]) -> Callable[[str, str, str | None], None]:
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
                "finished_at": timestamp(),
            }
        )

    return record


def recorded(run_dir: RunDir, summary: dict[str, Any], train: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``train`` and record how it ended in ``summary.json``: completed, failed (never raised: a sweep's other
    runs carry on), interrupted (its checkpoint left for the next run to resume from) or pruned (an Optuna pruner
    stopped it; its checkpoint is kept, ``force=true`` continues it)."""
    return recorded_together([(run_dir, summary)], lambda: [train()])[0]


def recorded_together(
    runs: list[tuple[RunDir, dict[str, Any]]], train: Callable[[], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """:func:`recorded` for runs trained together (a batched seed group): ``train`` returns each run's results, in
    order; how the training ended otherwise (an error, a signal, a pruner) is recorded in every run's summary."""
    try:
        for (_, summary), results in zip(runs, train(), strict=True):
            summary.update(results)
    except (ConfigError, Diverged, EnvTimeout) as error:
        _update_all(runs, status="failed", error=str(error), traceback=None)
    except Interrupted as interrupt:  # a checkpoint was written at the current step: the next run resumes there
        then = (
            "submitit requeues the job, which resumes there"
            if requeued_by_scheduler(interrupt.name)
            else "rerun the same command to resume"
        )
        for run_dir, summary in runs:
            step = run_dir.checkpoint_step()
            at = f"at {step} env steps" if step is not None else "before its first checkpoint"
            summary.update(
                status="interrupted",
                signal=interrupt.name,
                timesteps=step,
                error=f"stopped by {interrupt.name} {at}; {then}",
            )
    except Pruned as pruned:
        for run_dir, summary in runs:
            summary.update(
                status="pruned",
                pruned_at=pruned.step,
                timesteps=run_dir.checkpoint_step(),
                objective=None,
                error=None,
                wall_time_s=run_dir.checkpoint_wall_time(),
            )
    except Exception as error:  # a failed run is recorded, never allowed to take the sweep down
        _update_all(runs, status="failed", error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
    except BaseException:  # KeyboardInterrupt / SystemExit: leave the checkpoint for the next resume
        _update_all(runs, status="interrupted")
        raise
    finally:
        finish_loggers()
        for run_dir, summary in runs:
            summary["finished_at"] = timestamp()
            _write_final_summary(run_dir, summary)
    return [summary for _, summary in runs]


def _update_all(runs: list[tuple[RunDir, dict[str, Any]]], **fields: Any) -> None:
    for _, summary in runs:
        summary.update(fields)


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


def timestamp() -> str:
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
    if summary["status"] in ("failed", "interrupted", "damaged"):
        return f"{name}: {summary['status'].upper()}: {summary.get('error')}"
    score = f"{summary['final_mean_return']:.1f} +/- {summary['final_std_return']:.1f}"
    threshold = summary.get("threshold")
    solved = ""
    if threshold is not None:
        at = summary.get("steps_to_threshold")
        if at is not None:
            solved = f"; reached {threshold:g} at {at} steps (held for {stats.THRESHOLD_WINDOW} evaluations)"
        elif summary["final_mean_return"] >= threshold:  # a late (or lucky) evaluation is not yet "reached"
            solved = f"; {threshold:g} not held for {stats.THRESHOLD_WINDOW} evaluations in a row yet"
        else:
            solved = f"; below {threshold:g}"
    done = "already completed, skipped" if summary["status"] == "skipped" else summary["status"]
    note = f"; {summary['note']}" if summary.get("note") else ""
    return (
        f"{name}: {done}; final evaluation {score} after {summary['timesteps']} env steps{solved}; "
        f"results in {summary['run_dir']}{note}"
    )
