"""One multirun's bookkeeping: what each job returns to the sweeper, the table of its jobs, the best trial; and the
Hydra callback that guards a run or a multirun before Hydra creates any directory (``RunGuard``: ``out_dir``
writable and ``sweep`` a relative path below it, each value of a swept one too, else one line and exit 1; then this
process takes over SIGINT / SIGTERM, lit_bench.control.signals).

Every job of a multirun appends one line (its run's outcome) to ``<out_dir>/<sweep>/.invocations/<id>.jsonl``; the
``SweepReport`` callback reads that file when all jobs have ended, so the table lists exactly this multirun's jobs
(every trial of an Optuna sweep, a run skipped because it was already completed) whatever other processes write to
the same sweep directory at the same time.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import signal
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import yaml
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ValueType
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from lit_bench.config.checks import ConfigError, check_out_dir, check_sweep
from lit_bench.config.identity import sweep_path
from lit_bench.control import signals
from lit_bench.store.format import BEST_TRIAL
from lit_bench.store.rundir import RunDir, atomic_write_text, open_no_follow

INVOCATION_ENV = "LIT_BENCH_INVOCATION"  # set by SweepReport: which runs belong to this multirun
TAG_ENV = "LIT_BENCH_SWEEP_TAG"  # optional prefix of the multirun id (``regress`` finds its own records by it)
MAX_ROWS = 40  # one screen; beyond it only the jobs that did not complete are listed
RECORD_KEYS = (
    "algo",
    "env",
    "seed",
    "backend",
    "variant",
    "config_id",
    "status",
    "timesteps",
    "final_mean_return",
    "objective",
    "wall_time_s",
    "error",
    "run_dir",
    "pruned_at",
    "job",
    "job_overrides",
)


class RunFailed(RuntimeError):
    """Raised to a sweeper that uses return values (Optuna): the run failed, so the trial has no value."""


class RunPruned(RuntimeError):
    """Raised to the Optuna sweeper: a pruner stopped the run (after the evaluation at ``step`` env steps)."""

    def __init__(self, run_dir: str, step: int | None) -> None:
        super().__init__(run_dir, step)  # the arguments, so that it pickles back from a launcher's worker
        self.step = step

    def __str__(self) -> str:
        return f"{self.args[0]}: pruned after the evaluation at {self.step} env steps"


_ENUMERABLE = (ValueType.SIMPLE_CHOICE_SWEEP, ValueType.CHOICE_SWEEP, ValueType.RANGE_SWEEP)


def swept(config: DictConfig, key: str) -> list[str]:
    """Every value a multirun's jobs give ``key``: those of the command line's sweep of it (``-m sweep=a,b``), else
    the config's one value (the multirun's config holds no swept value)."""
    for override in OverridesParser.create().parse_overrides(list(config.hydra.overrides.task)):
        if override.key_or_group == key and override.value_type in _ENUMERABLE:
            return list(override.sweep_string_iterator())
    return [str(config[key])]


def sweep_dirs(config: DictConfig) -> list[Path]:
    """The ``<out_dir>/<sweep>`` directories a multirun's jobs write into (several when it sweeps either name)."""
    return [
        sweep_path({"out_dir": out, "sweep": name})
        for out in swept(config, "out_dir")
        for name in swept(config, "sweep")
    ]


def records_dir(sweep_dir: Path) -> Path:
    return sweep_dir / ".invocations"


def record(sweep_dir: Path, invocation: str, summary: dict[str, Any]) -> None:
    """Append this job's outcome to its multirun's records (one short line; appends are serialized by a lock)."""
    path = records_dir(sweep_dir) / f"{invocation}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({k: summary.get(k) for k in RECORD_KEYS}, default=str) + "\n"
    with os.fdopen(open_no_follow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        file.write(line)
        file.flush()
        fcntl.flock(file, fcntl.LOCK_UN)


def read_records(sweep_dir: Path, invocation: str = "*") -> list[dict[str, Any]]:
    """The job records of one multirun (``invocation`` may be a glob, e.g. ``<tag>-*``), one per job: a job that ran
    more than once (requeued by SLURM after a time limit or a preemption) is its last attempt."""
    found: list[dict[str, Any]] = []
    for path in sorted(records_dir(sweep_dir).glob(f"{invocation}.jsonl")):
        attempts: dict[Any, dict[str, Any]] = {}
        for n, line in enumerate(path.read_text().splitlines()):
            if line.strip():
                entry = json.loads(line)
                attempts.pop(key := entry.get("job", f"line {n}"), None)  # re-inserted: ordered by last attempt
                attempts[key] = entry
        found += attempts.values()
    return found


def record_job(cfg: DictConfig, summary: dict[str, Any]) -> None:
    """In a multirun: add this job's outcome to the multirun's records (the sweep table reads them)."""
    invocation = os.environ.get(INVOCATION_ENV)
    hydra_cfg = HydraConfig.get()
    if invocation and hydra_cfg.mode == RunMode.MULTIRUN:  # (its overrides: which jobs the launcher ran)
        record(
            sweep_path(cfg),
            invocation,
            {**summary, "job": hydra_cfg.job.num, "job_overrides": list(hydra_cfg.overrides.task)},
        )


def job_result(cfg: DictConfig, summary: dict[str, Any]) -> float | None:
    """What run.py's task function returns: the run's objective. A failed run exits 1 (single run), is a failed
    trial (raises ``RunFailed``) for a sweeper that uses return values, and NaN for Hydra's basic sweeper, which
    ignores them (its multirun then reports the failure and exits 1). A pruned trial raises ``RunPruned``."""
    hydra_cfg = HydraConfig.get()
    failed = summary["status"] in ("failed", "damaged")  # damaged: a completed run left for the user
    if hydra_cfg.mode == RunMode.RUN:
        if failed:
            sys.exit(1)
        return None if summary["status"] == "pruned" else float(summary["objective"])  # pruned: no score
    record_job(cfg, summary)
    if summary["status"] == "pruned":
        raise RunPruned(summary["run_dir"], summary.get("pruned_at"))
    if not failed:
        return float(summary["objective"])
    if basic_sweeper(hydra_cfg):
        return math.nan
    raise RunFailed(f"{summary['run_dir']}: {summary.get('error')}")


def basic_sweeper(hydra_cfg: Any) -> bool:
    """Whether the multirun's sweeper (``hydra_cfg``: the ``hydra`` node) is Hydra's basic one: it ignores return
    values and re-raises a failed job's error."""
    return str(hydra_cfg.sweeper.get("_target_", "")).endswith(".BasicSweeper")


def _count(records: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in records:
        status = "completed" if r.get("status") == "skipped" else str(r.get("status"))
        counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) + f" ({len(records)} runs)"


def _pruned(record: dict[str, Any]) -> str:
    return f"pruned after the evaluation at {record['pruned_at']} env steps" if record.get("pruned_at") else ""


def table(records: list[dict[str, Any]]) -> str:
    """One line per job (skipped = already completed by an earlier or concurrent job), then the counts."""
    rows = records if len(records) <= MAX_ROWS else [r for r in records if r.get("status") != "completed"]
    width = max([7, *(len(r.get("variant") or "") for r in rows)])
    lines = [
        f"{'algo':<12} {'env':<22} {'variant':<{width}} {'seed':>4} {'backend':<7} {'status':<10} {'steps':>9} "
        f"{'final':>9} {'objective':>9} {'wall_s':>8}  error"
    ]
    for r in rows:
        final, objective = r.get("final_mean_return"), r.get("objective")
        lines.append(
            f"{r.get('algo') or '?':<12} {r.get('env') or '?':<22} {r.get('variant') or '-':<{width}} "
            f"{'?' if r.get('seed') is None else r['seed']:>4} {r.get('backend') or '?':<7} "
            f"{r.get('status') or '?':<10} "
            f"{r.get('timesteps') or '':>9} {'' if final is None else f'{final:.1f}':>9} "
            f"{'' if objective is None else f'{objective:.1f}':>9} {r.get('wall_time_s') or '':>8}  "
            f"{(r.get('error') or _pruned(r))[:100]}"
        )
    lines.append(_count(records))
    return "\n".join(lines)


def best_trial(records: list[dict[str, Any]], direction: str) -> dict[str, Any] | None:
    """The record with the best objective (``maximize`` or ``minimize``); None when no job has a value."""
    scored = [r for r in records if r.get("objective") is not None and not math.isnan(r["objective"])]
    if not scored:
        return None
    sign = 1.0 if direction == "maximize" else -1.0
    return max(scored, key=lambda r: sign * r["objective"])


def write_best_trial(sweep_dir: Path, best: dict[str, Any], direction: str) -> Path:
    """``<sweep>/best_trial.yaml``: the best run's value, directory, differences from the defaults and config."""
    run = RunDir(best["run_dir"])
    summary = run.read_summary() or {}
    content = {
        "direction": direction,
        "objective": best["objective"],
        "run_dir": best["run_dir"],
        "variant": best.get("variant"),
        "config_id": best.get("config_id"),
        "overrides": summary.get("overrides"),
        "config": run.read_config(),
    }
    path = sweep_dir / BEST_TRIAL
    atomic_write_text(path, yaml.safe_dump(content, sort_keys=False))
    return path


def _direction(config: DictConfig) -> str | None:
    """The optimization direction of a sweeper that has one (Optuna), as ``maximize`` / ``minimize``."""
    direction = config.hydra.sweeper.get("direction")
    if direction is None or not isinstance(getattr(direction, "name", direction), str):
        return None  # none, or several objectives
    return str(getattr(direction, "name", direction))


class SweepReport(Callback):
    """Tags this multirun's jobs (env var inherited by launcher workers) and reports them when all have ended."""

    def __init__(self) -> None:
        self.invocation: str | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        tag = os.environ.get(TAG_ENV)
        self.invocation = f"{tag}-{uuid.uuid4().hex[:12]}" if tag else uuid.uuid4().hex[:12]
        os.environ[INVOCATION_ENV] = self.invocation

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        """In the job's process: a worker on another node (Ray, SLURM) has not inherited the multirun's environment,
        but Hydra hands every job this callback, with the invocation set by ``on_multirun_start``."""
        if self.invocation is not None:
            os.environ[INVOCATION_ENV] = self.invocation

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        assert self.invocation is not None
        # lit_bench's Optuna sweeper writes best_trial.yaml itself, from its whole study (earlier commands included)
        direction = None if "study_name" in config.hydra.sweeper else _direction(config)
        report(sweep_dirs(config), self.invocation, direction, str(config.objective.metric))


def report(sweep_dirs: list[Path], invocation: str | None, direction: str | None = None, metric: str = "") -> None:
    """Print the table of this multirun's jobs (and its best trial under a sweeper with a direction); exit non-zero
    if any did not complete (128 + the signal when the sweep was stopped by one)."""
    records = [r for sweep_dir in sweep_dirs for r in read_records(sweep_dir, invocation or "*")]
    print(f"\nsweep {', '.join(map(str, sweep_dirs))}:\n{table(records)}", flush=True)
    best = best_trial(records, direction) if direction else None
    if best is not None and direction is not None:
        home = [d for d in sweep_dirs if Path(best["run_dir"]).is_relative_to(d)]  # the best run's own sweep
        path = write_best_trial((home or sweep_dirs)[0], best, direction)
        print(
            f"best ({direction}, objective {metric}): {best['objective']:.2f} "
            f"{best.get('variant') or '(defaults)'} seed {best.get('seed')} -> {path}",
            flush=True,
        )
    stopped = signals.pending()
    if stopped is not None:
        print(
            f"sweep stopped by {signal.Signals(stopped).name}: runs not listed did not start; "
            f"rerun the same command to resume",
            flush=True,
        )
        sys.exit(128 + stopped)
    if any(r.get("status") not in ("completed", "skipped", "pruned") for r in records):
        sys.exit(1)


def _check_out_dir(config: DictConfig) -> None:
    """Every ``out_dir`` and ``sweep`` the run or the multirun's jobs use (each value of ``-m sweep=a,b``): checked
    here, before Hydra makes the sweep's or any job's directory."""
    try:
        for out_dir in swept(config, "out_dir"):
            check_out_dir(out_dir)
            for sweep in swept(config, "sweep"):
                check_sweep(sweep, out_dir)
    except ConfigError as error:
        print(f"Error: {error}", file=sys.stderr, flush=True)
        sys.exit(1)


class RunGuard(Callback):
    def __init__(self) -> None:
        self.stop_file = Path(tempfile.gettempdir()) / f"lit_bench-stop-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_out_dir(config)
        signals.install()

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_out_dir(config)
        signals.start_sweep(str(self.stop_file))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        self.stop_file.unlink(missing_ok=True)
