"""Hydra's joblib launcher, surviving a worker that dies (the OOM killer, a segfault in an env, ``kill -9``): the
harness's default launcher (``hydra/launcher=lit_joblib``; Hydra loads launchers only from ``hydra_plugins``).

Joblib's process pool breaks when one worker dies: every job still running or waiting fails with it, and the
multirun ends in a traceback. Here the jobs that have no record in this multirun yet (``lit_bench.control.sweep``)
are launched again one at a time; a job whose worker dies then is recorded ``failed`` (naming its overrides), and
the others run. Jobs that were running when the pool broke resume from their checkpoints. The sweep table lists
every job, and the multirun exits 1.
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
from omegaconf import DictConfig

from lit_bench.config.identity import sweep_path
from lit_bench.control import signals, sweep


class JoblibLauncher(HydraJoblibLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        try:
            return _core.launch(launcher=self, job_overrides=job_overrides, initial_job_idx=initial_job_idx)
        except TerminatedWorkerError as error:
            if signals.pending() is not None:  # stopped by a signal (a worker that had to exit at once): no reruns
                return [
                    JobReturn(overrides=list(o), status=JobStatus.COMPLETED, _return_value=None) for o in job_overrides
                ]
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
                returns.append(_died(_own_sweep_dir(self.config, overrides), invocation, overrides, error))
        return returns


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


def _died(sweep_dir: Path, invocation: str, overrides: Sequence[str], error: TerminatedWorkerError) -> JobReturn:
    """Record the job whose worker died as failed (in the sweep table) and give Hydra a value for it."""
    values = dict(o.split("=", 1) for o in overrides if "=" in o and not o.startswith(("+", "~")))
    sweep.record(
        sweep_dir,
        invocation,
        {
            "algo": values.get("algo"),
            "env": values.get("env"),
            "seed": values.get("seed"),
            "backend": values.get("backend"),
            "status": "failed",
            "job_overrides": list(overrides),
            "error": f"its joblib worker died ({_why(error)}); rerun the sweep to resume it: {' '.join(overrides)}",
        },
    )
    return JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED, _return_value=math.nan)
