"""Hydra's joblib launcher, surviving a worker that dies (the OOM killer, a segfault in an env, ``kill -9``): the
harness's default launcher (``hydra/launcher=lit_joblib``; Hydra loads launchers only from ``hydra_plugins``).

Joblib's process pool breaks when one worker dies: every job still running or waiting fails with it, and the
multirun ends in a traceback. Here the jobs that have no record in this multirun yet (``lit_bench.control.sweep``)
are launched again one at a time; a job whose worker dies then is recorded ``failed`` (naming its overrides), and
the others run. Jobs that were running when the pool broke resume from their checkpoints. The sweep table lists
every job, and the multirun exits 1. The table and the run directories agree: a job whose worker died is ``failed``
in both (its directory named in the table; a run it left ``running`` is recorded failed there, resumable), and a run
left ``running`` by a pool broken while the sweep was being stopped is listed too.

The workers are forked from one process that has imported what a job needs (``lit_bench.control.worker_preload``:
Lightning, SB3, torch: ~4 CPU s) while the launching process was still composing the jobs' configs: a job starts
without imports of its own, every worker shares the one import, and a worker leaves without the ~1 s a process that
imported torch and Lightning spends exiting (a fork ends at once; the sweep waits for its workers). That process is
Python's ``forkserver``, started at the launcher's setup, after the multirun's environment is set
(``on_multirun_start``): workers inherit its environment, not the launching process's later one, so the thread limits
joblib gives its workers are set for it (``_worker_thread_limits``). Linux only (a forked worker tells that the sweep
has ended from the forkserver's parent, in ``/proc``: ``lit_bench.control.signals.watch_sweep``), and not where the
jobs run in the launching process (``n_jobs=1``).
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.forkserver
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hydra.core.utils import JobReturn, JobStatus
from hydra.types import HydraContext, TaskFunction
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher as HydraJoblibLauncher
from joblib import cpu_count
from joblib._parallel_backends import LokyBackend
from joblib.externals.loky.backend import context as loky_context
from joblib.externals.loky.process_executor import TerminatedWorkerError
from omegaconf import DictConfig, open_dict

from hydra_plugins.lit_bench_launchers.lost_jobs import lost_job, lost_run
from lit_bench.config.identity import sweep_path
from lit_bench.control import seed_groups, signals, sweep

# What the workers' parent imports (by name: importing it imports a job's modules); a module that fails to import
# there is imported (and fails) in the job, as without it
WORKER_PRELOAD = "lit_bench.control.worker_preload"


class JoblibLauncher(HydraJoblibLauncher):
    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)
        n_jobs = seed_groups.jobs_at_once(config.hydra.launcher)
        if n_jobs is not None and n_jobs > 1 and sys.platform.startswith("linux"):
            start_preloaded_workers(n_jobs)

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        return seed_groups.launch(self, job_overrides, initial_job_idx, self._launch_jobs)

    def _launch_jobs(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        try:
            return HydraJoblibLauncher.launch(self, job_overrides, initial_job_idx)  # (its public dispatch)
        except TerminatedWorkerError as error:
            if signals.pending() is not None:  # stopped by a signal (a worker that had to exit at once): no reruns
                return [self._stopped(o, idx, error) for idx, o in enumerate(job_overrides, start=initial_job_idx)]
            print(
                f"a joblib worker died ({_why(error)}): the jobs that did not finish run again, one at a time",
                flush=True,
            )
        assert self.config is not None
        invocation = os.environ.get(sweep.INVOCATION_ENV, "*")
        finished = {  # (every sweep directory the jobs write into: `-m sweep=a,b` records under each)
            tuple(r.get("job_overrides") or ()): r.get("objective")
            for sweep_dir in sweep.sweep_dirs(self.config)
            for r in sweep.read_records(sweep_dir, invocation)
        }
        returns = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            if tuple(overrides) in finished or signals.pending() is not None:  # done, or the sweep was stopped
                value = finished.get(tuple(overrides))
                returns.append(
                    JobReturn(
                        overrides=list(overrides),
                        status=JobStatus.COMPLETED,
                        _return_value=math.nan if value is None else value,
                    )
                )
                continue
            _fresh_pool()
            try:
                returns += HydraJoblibLauncher.launch(self, [overrides], idx)
            except TerminatedWorkerError as error:
                returns.append(self._lost(overrides, idx, _died(overrides, error)))
        return returns

    def _job_config(self, overrides: Sequence[str], idx: int) -> DictConfig:
        """The job's own config, as joblib's worker composes it (its run directory, variant and config id)."""
        assert self.config is not None and self.hydra_context is not None
        job_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(job_config):
            job_config.hydra.job.id = f"{job_config.hydra.job.name}_{idx}"
            job_config.hydra.job.num = idx
        return job_config

    def _lost(self, overrides: Sequence[str], idx: int, message: str) -> JobReturn:
        """A job that ended without returning: failed in the sweep table and in its run directory."""
        assert self.config is not None
        job_config = self._job_config(overrides, idx)
        return lost_job(_own_sweep_dir(self.config, overrides), job_config, list(overrides), message)

    def _stopped(self, overrides: Sequence[str], idx: int, error: TerminatedWorkerError) -> JobReturn:
        """A job of a pool that broke while the sweep was being stopped: one that had started and left its run
        ``running`` is recorded (failed, resumable); one that had not started stays out of the table."""
        job_config = self._job_config(overrides, idx)
        if lost_run(job_config) is None:
            return JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, _return_value=None)
        return self._lost(overrides, idx, _died(overrides, error))


def start_preloaded_workers(n_jobs: int) -> None:
    """Fork joblib's workers from a process that imports a job's modules now, beside this one (module docstring)."""
    for name, value in _worker_thread_limits(n_jobs).items():
        os.environ.setdefault(name, value)
    os.environ[signals.FORKSERVER_OF_ENV] = str(os.getpid())  # (a worker watches the forkserver, its parent)
    # (a main module run with ``python -m``, as regress runs lit_bench.cli.bench, is left to each worker to run)
    os.environ[signals.SWEEP_MAIN_ENV] = getattr(sys.modules["__main__"].__spec__, "name", None) or ""
    multiprocessing.set_forkserver_preload([WORKER_PRELOAD])
    multiprocessing.forkserver.ensure_running()  # (returns at once: the imports run in the new process)
    loky_context.set_start_method("forkserver", force=True)


def _worker_thread_limits(n_jobs: int) -> dict[str, str]:
    """The thread limits joblib gives the workers it spawns (each library's threads: the cores over the jobs, where
    the variable is not set, and TBB's schedulers told to share the cores), which a forked worker would not get."""
    limits = {name: str(max(cpu_count() // n_jobs, 1)) for name in LokyBackend.MAX_NUM_THREADS_VARS}
    return {**limits, LokyBackend.TBB_ENABLE_IPC_VAR: "1"}


def _fresh_pool() -> None:
    """Start the next job in a new process pool (a broken one fails every job given to it)."""
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True, kill_workers=True)


def _why(error: TerminatedWorkerError) -> str:
    codes = str(error).split("The exit codes of the workers are ")
    return codes[1].split("\n")[0].rstrip(".").strip("{}") if len(codes) > 1 else str(error).split(".")[0]


def _own_sweep_dir(config: DictConfig, overrides: Sequence[str]) -> Path:
    """The ``<out_dir>/<sweep>`` a job writes into: its own values when the multirun sweeps them."""
    values = dict(o.split("=", 1) for o in overrides if "=" in o and not o.startswith(("+", "~")))
    return sweep_path({key: values.get(key, str(config[key])) for key in ("out_dir", "sweep")})


def _died(overrides: Sequence[str], error: TerminatedWorkerError) -> str:
    """Why a job ended without returning: its worker died."""
    return f"its joblib worker died ({_why(error)}); rerun the sweep to resume it: {' '.join(overrides)}"
