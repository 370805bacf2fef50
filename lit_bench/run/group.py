"""A group's job: several seeds of one config trained in one process (the launcher made the group and set
``seed_group``: ``lit_bench.control.seed_groups``).

The seeds are trained one after another, each exactly as its own job trains it (``lit_bench.run.train.run``: its
own run directory, lock, skip / resume / fresh, checkpoints, signal handling, summary and job record), inside the
Hydra job it has without groups (its job number, overrides and output directory): the process only saves the
imports a process per seed pays. A run's numbers do not depend on whether it was trained alone or after other runs
in the same process (each run seeds every random stream it uses from its seed, as a joblib worker reusing its
process for the following jobs has always relied on), so nothing records the group.

A signal stops the seed in training as it stops a run (checkpoint, ``interrupted``); the seeds after it do not
start (they are not in the sweep's table, like a sweep's jobs that had not started; rerunning the command trains
them), and the process exits as a run's does (``lit_bench.control.signals.finish``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from omegaconf import DictConfig

from lit_bench.config.identity import identify, resolved, run_path
from lit_bench.control import signals
from lit_bench.control.seed_groups import SeedReturn, member_config, member_overrides, members, set_job
from lit_bench.control.sweep import RunFailed, RunPruned, job_result, record_job


def run_group(cfg: DictConfig) -> list[SeedReturn]:
    """Train the group's seeds; what each seed's own job returns, for the launcher to hand back one per seed (seeds
    that did not start, after a signal, are left out)."""
    returns = []
    for seed, num in members(cfg) or []:
        if signals.pending() is not None or signals.sweep_stopped():
            break
        seed_cfg = member_config(cfg, seed, num)
        with _as_seed_job(seed_cfg, num):
            returns.append(_seed_job(seed_cfg, num))
    signals.finish()  # after a signal: exit as a run does (a joblib worker returns to its parent)
    return returns


def _seed_job(cfg: DictConfig, num: int) -> SeedReturn:
    """One seed, as ``lit_bench.cli.bench`` runs a job: trained, its line printed, recorded, its result."""
    from lit_bench.run.train import describe, run

    summary = run(cfg)
    print(describe(summary), flush=True)
    status = "COMPLETED"
    value: float | Exception | None = None
    if signals.pending() is None:
        try:
            value = job_result(cfg, summary)
        except (RunFailed, RunPruned) as error:  # a failed or pruned trial: so for the sweeper, as its own job
            status, value = "FAILED", error
    else:
        record_job(cfg, summary)  # interrupted: in the sweep table
    return SeedReturn(num=num, run_dir=summary.get("run_dir"), status=status, value=value)


@contextlib.contextmanager
def _as_seed_job(cfg: DictConfig, num: int) -> Iterator[None]:
    """Hydra's config of this process as the seed's own job's: its number, overrides and output directory (the
    seed's run directory), for the run's checks and records."""
    from hydra.core.hydra_config import HydraConfig

    hydra = HydraConfig.instance().cfg.hydra  # type: ignore[union-attr]
    saved = (hydra.job.num, list(hydra.overrides.task), hydra.runtime.output_dir)
    try:
        config = resolved(cfg)
        output_dir = os.path.abspath(run_path(config, identify(config)))
    except Exception:  # a config that does not resolve: the run fails on it, in one line
        output_dir = ""  # (no output directory: the run's check of it is skipped)
    set_job(hydra, num, member_overrides(saved[1], int(cfg.seed)), output_dir)
    try:
        yield
    finally:
        set_job(hydra, *saved)
