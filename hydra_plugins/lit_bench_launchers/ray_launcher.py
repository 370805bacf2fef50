"""Hydra's Ray launcher (hydra-ray-launcher's config and helpers), with one change: a job whose Ray worker dies
(killed, out of memory, its node lost) is a failed job of the sweep, not the end of the sweep.

hydra-ray-launcher waits for all jobs with one ``ray.get`` over the list, so the first dead worker raises out of the
multirun: the jobs still running are abandoned and no table is printed. Here each job is awaited on its own; a dead
worker's job is recorded as failed (its run directory keeps its last checkpoint, so rerunning the same command
resumes it) and the others run to their end.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, filter_overrides, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

from hydra_plugins.lit_bench_launchers.lost_jobs import lost_job

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
        from lit_bench.control import seed_groups

        return seed_groups.launch(self, job_overrides, initial_job_idx, self._launch_jobs)

    def jobs_at_once(self) -> int:
        """The jobs the cluster runs at once, as ``seeds_per_process=auto`` splits a config's seeds: its CPUs over
        each job's ``num_cpus`` (read from the cluster, which this connects to or starts)."""
        import ray
        from hydra_plugins.hydra_ray_launcher import _launcher_util

        _launcher_util.start_ray(self.ray_cfg.init)
        per_job = float(self.ray_cfg.remote.get("num_cpus") or 1)
        return max(1, int(float(ray.cluster_resources().get("CPU", 1)) // per_job))

    def _launch_jobs(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
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
            task = _launcher_util.launch_job_on_ray(
                self.hydra_context, self.ray_cfg.remote, job_config, self.task_function, Singleton.get_state()
            )
            jobs.append((job_config, list(overrides), task))
        results = []
        for job_config, overrides, task in jobs:
            try:
                results.append(ray.get(task))
            except ray.exceptions.RayTaskError:
                raise  # the job's own exception (the harness records its failures itself): as Hydra's launcher
            except ray.exceptions.RayError as error:  # the worker or its node died: the job never returned
                reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
                results.append(
                    lost_job(
                        sweep_dir,
                        job_config,
                        overrides,
                        f"Ray worker died ({type(error).__name__}: {reason[:160]}); "
                        f"rerun the same command to resume it",
                    )
                )
        return results
