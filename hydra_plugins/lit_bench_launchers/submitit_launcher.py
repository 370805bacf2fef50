"""hydra-submitit-launcher's SLURM and local launchers, with two changes.

A job that ends without a result (cancelled with ``scancel``, killed past its time limit, out of requeues, its node
lost) is one failed job of the sweep. The original waits for the jobs in order and raises at the first one without a
result, abandoning the jobs still running and printing no table. Here every job is awaited; one without a result is
recorded as failed, unless it recorded its own end (a run that got ``scancel``'s SIGTERM checkpoints and records
``interrupted``), and its run directory keeps its last checkpoint, so rerunning the same command resumes it.

Each job asks for the memory its run needs: ``mem_gb`` is the least a job asks for, a run whose replay buffer needs
more (``lit_bench.control.suite_plan.memory_gb``: QR-DQN on Atari with the Zoo's 1M-transition buffer, ~108 GB with
buffer checkpoints) asks for that; jobs of one request are one job array.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
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


def memory_requests(launcher: Any, job_overrides: Sequence[Sequence[str]], least: int | None) -> list[int | None]:
    """Per job: the GB to ask for, at least ``least`` (the launcher's ``mem_gb``); ``least`` where the run cannot
    be sized here (its env does not build in the submitting process: the job reports why when it runs)."""
    from lit_bench.control.suite_plan import memory_gb

    requests = []
    for overrides in job_overrides:
        try:
            job_config = launcher.hydra_context.config_loader.load_sweep_config(launcher.config, list(overrides))
            needed = memory_gb(job_config)
        except Exception as error:  # whatever keeps a run from being sized here, the job meets it and reports it
            print(f"mem_gb: cannot size the job {' '.join(overrides)} ({error}); it asks for {least}", file=sys.stderr)
            requests.append(least)
            continue
        requests.append(needed if least is None else max(least, needed))
    for request, count in Counter(requests).items():
        if request != least:
            print(f"mem_gb: {count} job(s) ask for {request} GB, their runs' replay buffers", file=sys.stderr)
    return requests


def submit_by_memory(
    executor: Any, map_array: Any, fn: Any, columns: Sequence[Sequence[Any]], requests: list[int | None]
) -> list[Any]:
    """``map_array`` once per distinct memory request (one job array each, ``mem_gb`` set); jobs in input order."""
    jobs: list[Any] = [None] * len(requests)
    for request in dict.fromkeys(requests):
        chosen = [i for i, r in enumerate(requests) if r == request]
        if request is not None:
            executor.update_parameters(mem_gb=request)
        for i, job in zip(chosen, map_array(executor, fn, *([column[i] for i in chosen] for column in columns))):
            jobs[i] = job
    return jobs


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
            from lit_bench.control import seed_groups

            return seed_groups.launch(self, job_overrides, initial_job_idx, self._launch_jobs)

        def _launch_jobs(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            import submitit

            self.initial_job_idx = initial_job_idx
            submitted: list[Any] = []
            map_array = submitit.AutoExecutor.map_array

            def keep_jobs(executor: Any, fn: Any, *columns: Sequence[Any]) -> list[Any]:
                requests = memory_requests(self, job_overrides, self.params.get("mem_gb"))  # type: ignore[attr-defined]
                submitted.extend(submit_by_memory(executor, map_array, fn, columns, requests))
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

else:  # Hydra 1.4 loads every registered plugin entry point at start-up: without the extra, a launcher that says so
    from hydra.plugins.launcher import Launcher

    class _NeedsTheSlurmExtra(Launcher):
        def setup(self, **kwargs: Any) -> None:
            sys.exit(f"hydra/launcher: {type(self).__name__} needs the slurm extra: pip install -e '.[slurm]'")

        def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
            raise AssertionError("setup refused this launcher")

    class SlurmLauncher(_NeedsTheSlurmExtra):  # type: ignore[no-redef]
        """``hydra/launcher=slurm`` without hydra-submitit-launcher: refused in one line."""

        def __init__(self, **params: Any) -> None:
            pass

    class LocalLauncher(_NeedsTheSlurmExtra):  # type: ignore[no-redef]
        """``hydra/launcher=slurm_local`` without hydra-submitit-launcher: refused in one line."""

        def __init__(self, **params: Any) -> None:
            pass
