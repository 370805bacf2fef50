"""hydra-submitit-launcher's SLURM and local launchers, with one change: a job that ends without a result (cancelled
with ``scancel``, killed past its time limit, out of requeues, its node lost) is one failed job of the sweep.

The original waits for the jobs in order and raises at the first one without a result, abandoning the jobs still
running and printing no table. Here every job is awaited; one without a result is recorded as failed, unless it
recorded its own end (a run that got ``scancel``'s SIGTERM checkpoints and records ``interrupted``), and its run
directory keeps its last checkpoint, so rerunning the same command resumes it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn

from hydra_plugins.lit_bench_launchers.lost_jobs import lost_job

log = logging.getLogger(__name__)

try:  # the `slurm` extra; without it this module defines no launcher (Hydra imports it at start-up all the same)
    from hydra_plugins.hydra_submitit_launcher import submitit_launcher as _submitit
except ImportError:
    _submitit = None


def _await(launcher: Any, jobs: Sequence[Any], job_overrides: Sequence[Sequence[str]]) -> list[JobReturn]:
    """Each job's result, or a failed job for one that has none."""
    import submitit

    sweep_dir = Path(str(launcher.config.hydra.sweep.dir))
    results = []
    for job, overrides in zip(jobs, job_overrides):
        try:
            results.append(job.results()[0])
        except submitit.core.utils.UncompletedJobError as error:
            job_config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
            job_config.hydra.job.num = len(results) + launcher.initial_job_idx
            state = job.state
            results.append(
                lost_job(
                    sweep_dir,
                    job_config,
                    list(overrides),
                    f"SLURM job {job.job_id} ended without a result ({state}); its log: "
                    f"{job.paths.stderr}; rerun the same command to resume it",
                )
            )
            log.debug(str(error))
    return results


if _submitit is not None:

    class _AwaitEveryJob:
        """Submits as hydra-submitit-launcher does, then awaits every job (``_await``)."""

        initial_job_idx = 0

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            import submitit

            self.initial_job_idx = initial_job_idx
            submitted: list[Any] = []
            map_array = submitit.AutoExecutor.map_array

            def keep_jobs(executor: Any, *args: Any, **kwargs: Any) -> list[Any]:
                submitted.extend(map_array(executor, *args, **kwargs))
                return []  # the original then awaits no job: they are awaited below, each on its own

            submitit.AutoExecutor.map_array = keep_jobs  # type: ignore[method-assign]
            try:
                super().launch(job_overrides, initial_job_idx)  # type: ignore[misc]
            finally:
                submitit.AutoExecutor.map_array = map_array  # type: ignore[method-assign]
            return _await(self, submitted, job_overrides)

    class SlurmLauncher(_AwaitEveryJob, _submitit.SlurmLauncher):
        """``hydra/launcher=slurm``: jobs as a SLURM job array (real ``sbatch``)."""

    class LocalLauncher(_AwaitEveryJob, _submitit.LocalLauncher):
        """``hydra/launcher=slurm_local``: submitit's local executor (the SLURM code path without a cluster)."""
