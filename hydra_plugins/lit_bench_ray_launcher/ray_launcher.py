"""Hydra's Ray launcher, with one change: a job whose Ray worker dies (killed, out of memory, its node lost) is a
failed job of the sweep, not the end of the sweep.

hydra-ray-launcher waits for all jobs with one ``ray.get`` over the list, so the first dead worker raises out of the
multirun: the jobs still running are abandoned and no table is printed. Here each job is awaited on its own; a dead
worker's job is recorded as failed (its run directory keeps its last checkpoint, so rerunning the same command
resumes it) and the others run to their end.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)


class RayLauncher(Launcher):
    """``hydra/launcher=ray`` and ``ray_local``: jobs as Ray tasks on a running cluster (or one started here).

    Takes hydra-ray-launcher's ``ray: {init: ..., remote: ...}`` config and runs jobs through its helpers (imported
    only when a sweep launches: Hydra imports every module under ``hydra_plugins`` at start-up).
    """

    def __init__(self, ray: DictConfig) -> None:
        self.ray_cfg = ray
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray
        from hydra_plugins.hydra_ray_launcher import _launcher_util

        setup_globals()
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        _launcher_util.start_ray(self.ray_cfg.init)
        jobs = []
        for num, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info(f"\t#{num} : {' '.join(filter_overrides(overrides))}")
            job_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(job_config):
                job_config.hydra.job.id = f"ray_{num}"  # the worker has no scheduler id of its own
                job_config.hydra.job.num = num
            task = _launcher_util.launch_job_on_ray(self.hydra_context, self.ray_cfg.remote, job_config,
                                                    self.task_function, Singleton.get_state())
            jobs.append((job_config, list(overrides), task))
        results = []
        for job_config, overrides, task in jobs:
            try:
                results.append(ray.get(task))
            except ray.exceptions.RayTaskError:
                raise  # the job's own exception (the harness records its failures itself): as Hydra's launcher
            except ray.exceptions.RayError as error:  # the worker or its node died: the job never returned
                results.append(_worker_died(sweep_dir, job_config, overrides, error))
        return results


def _worker_died(sweep_dir: Path, job_config: DictConfig, overrides: list[str], error: Exception) -> JobReturn:
    from lit_bench.sweep import INVOCATION_ENV, RunFailed, basic_sweeper, record

    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    message = f"Ray worker died ({type(error).__name__}: {reason[:160]}); rerun the same command to resume it"
    with _as_job(job_config):  # the job's names and run directory resolve through its own Hydra config
        summary: dict[str, Any] = {
            "algo": job_config.get("algo_name"), "env": job_config.get("env_name"), "seed": job_config.get("seed"),
            "backend": job_config.get("backend"), "status": "failed", "error": message,
            "job": job_config.hydra.job.num, **_run_fields(job_config)}
    invocation = os.environ.get(INVOCATION_ENV)
    if invocation:
        record(sweep_dir, invocation, summary)
    log.error(f"#{job_config.hydra.job.num} {' '.join(filter_overrides(overrides))}: {message}")
    result = JobReturn(overrides=overrides, cfg=job_config, hydra_cfg=job_config.hydra, working_dir=None)
    # what a failed run returns from its own process (lit_bench.sweep.job_result): NaN for Hydra's basic sweeper,
    # which re-raises a failed job's error (the sweep table says what failed), a failed trial for other sweepers
    if basic_sweeper(job_config.hydra):
        result.status, result._return_value = JobStatus.COMPLETED, math.nan
    else:
        result.status, result._return_value = JobStatus.FAILED, RunFailed(f"{summary['run_dir']}: {message}")
    return result


@contextlib.contextmanager
def _as_job(job_config: DictConfig) -> Iterator[None]:
    from hydra.core.hydra_config import HydraConfig

    hydra_config = HydraConfig.instance()
    launcher_config = hydra_config.cfg
    hydra_config.set_config(job_config)
    try:
        yield
    finally:
        hydra_config.cfg = launcher_config


def _run_fields(job_config: DictConfig) -> dict[str, Any]:
    """The dead job's run directory, variant and config id (None when its config cannot be resolved here)."""
    from lit_bench.identity import identify, resolved, run_path

    try:
        config = resolved(job_config)
        identity = identify(config)
        return {"run_dir": str(run_path(config, identity)), "variant": identity.variant,
                "config_id": identity.config_id}
    except Exception:  # a config that failed in the job would have been recorded by the job itself
        return {"run_dir": None}
