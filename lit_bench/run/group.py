"""A group's job: several seeds of one config trained in one process (the launcher made the group and set
``seed_group``: ``lit_bench.control.seed_groups``).

Where ``lit_bench.run.batched.refusal`` allows it, a group of 2 seeds or more (or one seed the launcher sent
``batched: true``: ``auto``'s seed alone with a batched run) trains as ONE batched model (lit_sb3's ``SeedGroup``):
each is opened as its own run (``train.open_run``: its directory, lock, skip / resume / fresh, ``running``
summary), with ``batched: true`` in its config (another run than its own process's), and those that train are
trained together (``lit_bench.run.batched``), one group per env step they start from; each is then recorded as its
own job. A signal checkpoints every seed at the group's next round boundary and records each ``interrupted``.

Otherwise the seeds are trained one after another, each exactly as its own job trains it
(``lit_bench.run.train.run``: its own run directory, lock, skip / resume / fresh, checkpoints, signal handling,
summary and job record), inside the Hydra job it has without groups (its job number, overrides and output
directory): the process only saves the imports a process per seed pays. A run's numbers do not depend on whether it
was trained alone or after other runs in the same process (each run seeds every random stream it uses from its
seed, as a joblib worker reusing its process for the following jobs has always relied on), so nothing records the
group. A signal stops the seed in training as it stops a run (checkpoint, ``interrupted``); the seeds after it do
not start (they are not in the sweep's table, like a sweep's jobs that had not started; rerunning the command
trains them), and the process exits as a run's does (``lit_bench.control.signals.finish``).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, read_write

from lit_bench.config.identity import BATCHED, identify, resolved
from lit_bench.control import signals
from lit_bench.control.seed_groups import (
    SeedReturn,
    launched_batched,
    member_config,
    member_overrides,
    members,
    set_job,
)
from lit_bench.control.sweep import RunFailed, RunPruned, job_result, record_job


def run_group(cfg: DictConfig) -> list[SeedReturn]:
    """Train the group's seeds; what each seed's own job returns, for the launcher to hand back one per seed (seeds
    that did not start, after a signal, are left out)."""
    from lit_bench.run.batched import refusal

    seeds = [(member_config(cfg, seed, num), num) for seed, num in members(cfg) or []]
    together = len(seeds) > 1 or (bool(seeds) and launched_batched(cfg))  # (auto: one seed with a batched run)
    why = refusal(seeds[0][0]) if together else "one seed"  # (one seed: its own run, as its own job trains it)
    if why is None:
        returns = _batched(seeds)
    else:
        if len(seeds) > 1:
            print(f"seeds {[int(c.seed) for c, _ in seeds]}: trained one after another ({why})", flush=True)
        returns = []
        for seed_cfg, num in seeds:
            if signals.pending() is not None or signals.sweep_stopped():
                break
            with _as_seed_job(seed_cfg, num):
                returns.append(_seed_job(seed_cfg, num))
    signals.finish()  # after a signal: exit as a run does (a joblib worker returns to its parent)
    return returns


def _seed_job(cfg: DictConfig, num: int) -> SeedReturn:
    """One seed, as ``lit_bench.cli.bench`` runs a job: trained, its line printed, recorded, its result."""
    from lit_bench.run.train import run

    return _returned(cfg, num, run(cfg))


def _returned(cfg: DictConfig, num: int, summary: dict[str, Any]) -> SeedReturn:
    """A seed's end, as its own job's: its line printed, its job recorded, its result (in its job's context)."""
    from lit_bench.run.outcome import describe

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


def _batched(seeds: list[tuple[DictConfig, int]]) -> list[SeedReturn]:
    """The seeds as one batched model (``lit_bench.run.batched``): each opened as its own run (checks, lock, skip /
    resume / fresh), those that train built into one ``SeedGroup`` per env step they start from, each recorded and
    returned as its own job."""
    from lit_bench.run.batched import Seat, train_together
    from lit_bench.run.outcome import recorded_together, stopped_at_once
    from lit_bench.run.train import Opened, open_run

    _drop_job_dir()
    for seed_cfg, _ in seeds:
        with read_write(seed_cfg):
            seed_cfg[BATCHED] = True  # its identity: another run than the seed's own process trains
    returns: dict[int, SeedReturn] = {}
    with contextlib.ExitStack() as held:  # every seed's lock, until the group has trained
        starts: dict[int, list[tuple[DictConfig, int, Opened]]] = {}
        for seed_cfg, num in seeds:
            if signals.pending() is not None or signals.sweep_stopped():
                break
            with _as_seed_job(seed_cfg, num):
                opened = open_run(seed_cfg, held)
                if not isinstance(opened, Opened):  # skipped, failed, damaged: its job ends here
                    returns[num] = _returned(seed_cfg, num, opened)
                    continue
            step = opened.start.step if opened.start.action == "resume" else 0
            starts.setdefault(step or 0, []).append((seed_cfg, num, opened))
        for cohort in starts.values():  # a seed's numbers do not depend on its group: one group per start step
            seats = [Seat(c, o.run_dir, o.budget, o.start.action == "resume", o.started) for c, _, o in cohort]
            runs = [(o.run_dir, o.summary) for _, _, o in cohort]
            at_once = [stopped_at_once(run_dir, summary) for run_dir, summary in runs]

            def record(status: str, why: str, signal: str | None, at_once: list[Any] = at_once) -> None:
                for each in at_once:
                    each(status, why, signal)

            with signals.on_hard_stop(record):
                summaries = recorded_together(runs, functools.partial(train_together, seats))
            for (seed_cfg, num, _), summary in zip(cohort, summaries):
                with _as_seed_job(seed_cfg, num):
                    returns[num] = _returned(seed_cfg, num, summary)
    return [returns[num] for _, num in seeds if num in returns]


def _drop_job_dir() -> None:
    """Remove the directory Hydra made for the group's job (its first seed's ungrouped run directory) when nothing
    is in it: the batched seeds are in directories of their own, and an empty one would look like a run."""
    from hydra.core.hydra_config import HydraConfig

    made = Path(str(HydraConfig.instance().cfg.hydra.runtime.output_dir))  # type: ignore[union-attr]
    for directory in (made, made.parent):
        with contextlib.suppress(OSError):  # not empty (a run is there), or already gone
            directory.rmdir()


@contextlib.contextmanager
def _as_seed_job(cfg: DictConfig, num: int) -> Iterator[None]:
    """Hydra's config of this process as the seed's own job's: its number, overrides and output directory (the
    seed's run directory), for the run's checks and records."""
    from hydra.core.hydra_config import HydraConfig

    hydra = HydraConfig.instance().cfg.hydra  # type: ignore[union-attr]
    saved = (hydra.job.num, list(hydra.overrides.task), hydra.runtime.output_dir)
    try:
        config = resolved(cfg)
        output_dir = os.path.abspath(identify(config).root)
    except Exception:  # a config that does not resolve: the run fails on it, in one line
        output_dir = ""  # (no output directory: the run's check of it is skipped)
    set_job(hydra, num, member_overrides(saved[1], int(cfg.seed)), output_dir)
    try:
        yield
    finally:
        set_job(hydra, *saved)
