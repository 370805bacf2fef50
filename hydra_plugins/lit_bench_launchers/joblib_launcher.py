"""Hydra's joblib launcher, surviving a worker that dies (the OOM killer, a segfault in an env, ``kill -9``): the
harness's default launcher (``hydra/launcher=lit_joblib``; Hydra loads launchers only from ``hydra_plugins``).

Joblib's process pool breaks when one worker dies: every job still running or waiting fails with it, and the
multirun ends in a traceback. Here the jobs that have no record in this multirun yet (``lit_bench.control.sweep``)
are launched again one at a time; a job whose worker dies then is recorded ``failed`` (naming its overrides), and
the others run. Jobs that were running when the pool broke resume from their checkpoints. The sweep table lists
every job, and the multirun exits 1. The table and the run directories agree: a job whose worker died is ``failed``
in both (its directory named in the table; a run it left ``running`` is recorded failed there, resumable), and a run
left ``running`` by a pool broken while the sweep was being stopped is listed too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from hydra.core.utils import JobReturn, JobStatus
from hydra_plugins.hydra_joblib_launcher import _core
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher as HydraJoblibLauncher
from joblib.externals.loky.process_executor import TerminatedWorkerError
from omegaconf import DictConfig, open_dict

from hydra_plugins.lit_bench_launchers.lost_jobs import lost_job, lost_run
from lit_bench.config.identity import sweep_path
from lit_bench.control import seed_groups, signals, sweep


class JoblibLauncher(HydraJoblibLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        return seed_groups.launch(self, job_overrides, initial_job_idx, self._launch_jobs)

    def _launch_jobs(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        try:
            return _core.launch(launcher=self, job_overrides=job_overrides, initial_job_idx=initial_job_idx)
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
                returns += _core.launch(launcher=self, job_overrides=[overrides], initial_job_idx=idx)
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
