"""A job that ended without returning (its process killed, its SLURM job cancelled): recorded for the sweep table,
in its run directory (a run it left ``running`` is recorded failed: the table and the directory agree) and returned
to the sweeper as a failed run returns from its own process (``lit_bench.control.sweep.job_result``)."""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from omegaconf import DictConfig

from lit_bench.control.seed_groups import as_job
from lit_bench.store.rundir import RunDir

log = logging.getLogger(__name__)


def lost_job(sweep_dir: Path, job_config: DictConfig, overrides: list[str], message: str) -> JobReturn:
    """Record ``message`` as the job's failure unless the job recorded its own end (an interrupted run does), and
    give the sweeper NaN (Hydra's basic sweeper re-raises a failed job's error) or a failed trial (others). A group
    of seeds (``lit_bench.control.seed_groups``) is recorded seed by seed, each as its own job."""
    from lit_bench.control.sweep import INVOCATION_ENV, RunFailed, basic_sweeper, read_records, record

    invocation = os.environ.get(INVOCATION_ENV)
    run_dir = None
    for config, own_overrides in _jobs_of(job_config, overrides):
        num = config.hydra.job.num
        with as_job(config):  # the job's names and run directory resolve through its own Hydra config
            summary: dict[str, Any] = {
                "algo": config.get("algo_name"),
                "env": config.get("env_name"),
                "seed": config.get("seed"),
                "backend": config.get("backend"),
                "status": "failed",
                "error": message,
                "job": num,
                "job_overrides": own_overrides,
                **_run_fields(config),
            }
        if invocation and not any(r.get("job") == num for r in read_records(sweep_dir, invocation)):
            record(sweep_dir, invocation, summary)
        if summary["run_dir"] is not None:
            RunDir(summary["run_dir"]).record_lost(message)
        run_dir = run_dir or summary["run_dir"]
        log.error(f"#{num} {' '.join(filter_overrides(own_overrides))}: {message}")
    result = JobReturn(overrides=overrides, cfg=job_config, hydra_cfg=job_config.hydra, working_dir=None)
    if basic_sweeper(job_config.hydra):
        result.status, result._return_value = JobStatus.COMPLETED, math.nan
    else:
        result.status, result._return_value = JobStatus.FAILED, RunFailed(f"{run_dir}: {message}")
    return result


def lost_run(job_config: DictConfig) -> RunDir | None:
    """The job's run directory (a group's: one of its seeds') when it holds a run left ``running`` by a process that
    is gone (None otherwise)."""
    for config, _ in _jobs_of(job_config, list(job_config.hydra.overrides.task)):
        with as_job(config):
            run_dir = _run_fields(config)["run_dir"]
        if run_dir is not None and RunDir(run_dir).left_running():
            return RunDir(run_dir)
    return None


def _jobs_of(job_config: DictConfig, overrides: list[str]) -> list[tuple[DictConfig, list[str]]]:
    """(config, overrides) of the job, or of each seed's job in a group of seeds."""
    from lit_bench.control.seed_groups import member_config, member_overrides, members

    try:
        seeds = members(job_config)
    except Exception:  # a group key that does not read: the job as it is
        seeds = None
    if seeds is None:
        return [(job_config, list(overrides))]
    return [(member_config(job_config, seed, num), member_overrides(overrides, seed)) for seed, num in seeds]


def _run_fields(job_config: DictConfig) -> dict[str, Any]:
    """The lost job's run directory, variant and config id (None when its config cannot be resolved here)."""
    from lit_bench.config.identity import identify, resolved

    try:
        config = resolved(job_config)
        identity = identify(config)
        return {
            "run_dir": str(identity.root),
            "variant": identity.variant,
            "config_id": identity.config_id,
        }
    except Exception:  # a config that fails to resolve failed in the job too, which recorded it
        return {"run_dir": None}
