"""``run(cfg)``: one configured run, start to finish, into its run directory.

The directory is the config's own (``lit_bench.config.identity``) and has one writer at a time (``RunDir.lock``).
Skips a run that already completed with the same config, resumes one that has a checkpoint, never touches a directory
that holds another config, and never raises for a failed run: the failure is recorded in ``summary.json`` (so that a
sweep's other runs carry on) and returned.

This module is the run's course; its parts: ``prepare`` (the checks before anything changes), ``start`` (skip,
resume or fresh; the directory made ready), ``fit`` (training to the budget, the final evaluation), ``outcome`` (the
summary's record of how the run ended, the console line).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

import torch
from omegaconf import DictConfig

from lit_bench import stats
from lit_bench.config.checks import ConfigError, check_objective, check_run_options
from lit_bench.config.hydra_versions import whitelisted
from lit_bench.config.identity import BATCHED, config_hash, config_id, identify, resolved, run_path
from lit_bench.config.trust import code_names
from lit_bench.control import signals
from lit_bench.control.signals import Interrupted
from lit_bench.run.batched import other_kind_of_checkpoint
from lit_bench.run.fit import train_and_score
from lit_bench.run.outcome import (
    describe,
    failed,
    record_config_error,
    recorded,
    run_fields,
    stopped_at_once,
    timestamp,
)
from lit_bench.run.prepare import prepare, warn_budget
from lit_bench.run.provenance import hydra_output_dir, provenance
from lit_bench.run.ranks import process_rank, run_rank
from lit_bench.run.start import Start, decide, left_damaged, not_retrained, open_run_dir
from lit_bench.store.format import format_problem
from lit_bench.store.rundir import RunDir


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train, evaluate and record one run; return its summary (``status``: completed, skipped or failed).

    ``objective`` (the score a sweeper gets, see ``lit_bench.stats.objective``) is set for completed and skipped runs.
    """
    if process_rank() > 0:  # a further process of a multi-process run (Lightning started it): trains, writes nothing
        return run_rank(cfg, prepare)
    if cfg.get(BATCHED):  # (a group's process trains its batched seeds with open_run and lit_bench.run.batched)
        return failed(
            {"algo": str(cfg.algo_name), "env": str(cfg.env_name), "seed": cfg.seed, "backend": str(cfg.backend)}
            | {"run_dir": None},
            f"{BATCHED}=true: set by a group's process for the seeds it trains as one batched model; train seeds "
            f"together with a sweep (seeds_per_process=auto or N) and leave {BATCHED} unset",
        )
    with contextlib.ExitStack() as held:
        opened = open_run(cfg, held)
        if not isinstance(opened, Opened):
            return opened
        run_dir, summary = opened.run_dir, opened.summary

        def rank_failed(error: str) -> None:
            ended = {**summary, **failed({}, error), "finished_at": timestamp()}
            run_dir.write_summary(ended)
            print(describe(ended), flush=True)

        with signals.on_hard_stop(stopped_at_once(run_dir, summary)):
            return recorded(
                run_dir,
                summary,
                lambda: train_and_score(
                    cfg, run_dir, opened.algo_cls, opened.budget, opened.start, opened.started, rank_failed
                ),
            )


@dataclass
class Opened:
    """A run that trains: its directory made ready for ``start`` and its ``running`` summary written."""

    run_dir: RunDir
    summary: dict[str, Any]
    algo_cls: type
    budget: int
    start: Start
    started: float  # perf_counter when the run began (its start-up time is measured from here)


def open_run(cfg: DictConfig, held: contextlib.ExitStack) -> dict[str, Any] | Opened:
    """A run up to its training: the checks, the lock (entered into ``held``, for the caller to keep while it
    trains), skip / resume / fresh, the directory made ready and the ``running`` summary. Returns the final summary
    of a run that does not train (failed, skipped, damaged, interrupted while waiting for the lock), or the
    :class:`Opened` run (a batched group opens each of its seeds so, then trains them together)."""
    try:
        check_run_options(cfg)  # seed, threads, ... shape the run directory: checked before it is named
    except ConfigError as error:
        return failed(
            {
                "algo": str(cfg.algo_name),
                "env": str(cfg.env_name),
                "seed": cfg.seed,
                "backend": str(cfg.backend),
                "run_dir": None,
            },
            str(error),
        )
    config = resolved(cfg)
    identity = identify(config)
    run_dir = RunDir(run_path(config, identity))
    base = run_fields(cfg, config, identity, run_dir)
    hydra_dir = hydra_output_dir()
    if hydra_dir is not None and hydra_dir != run_dir.root.resolve():
        return failed(
            base,
            f"hydra.run.dir / hydra.sweep.dir: Hydra's job directory {hydra_dir} is not the run's "
            f"{run_dir.root}; place runs with out_dir= and sweep= instead",
        )
    signals.set_stop_timeout(float(cfg.get("stop_timeout_s") or signals.STOP_TIMEOUT_S))
    try:
        held.enter_context(run_dir.lock(poll=signals.stop_if_pending))
    except OSError as error:  # e.g. a symlink where the lock goes, or a directory that cannot be made
        return failed(base, f"{run_dir.root}: cannot lock the run directory ({error.strerror or error})")
    except Interrupted as interrupt:  # while waiting for another process's run: nothing was changed
        return {
            **base,
            "status": "interrupted",
            "signal": interrupt.name,
            "timesteps": None,
            "error": f"stopped by {interrupt.name} while waiting for the run's lock; nothing was changed",
        }
    # the config is the caller's word (a command line, or run(cfg) from Python): Hydra 1.4 may resolve its targets
    held.enter_context(whitelisted([name for _, kind, name in code_names(config) if kind == "target"]))
    return _open_locked(cfg, config, run_dir, base)


def _open_locked(
    cfg: DictConfig, config: dict[str, Any], run_dir: RunDir, base: dict[str, Any]
) -> dict[str, Any] | Opened:
    started = time.perf_counter()
    unproven = run_dir.unproven()
    if unproven is not None:  # never deleted or rewritten: it may be a finished run, or not the harness's at all
        return failed(
            base,
            f"{run_dir.root}: {unproven}, so it cannot be shown to be a run of this config; "
            f"nothing was changed: move it, or use another sweep=",
        )
    previous, held = run_dir.read_summary(), run_dir.read_config()
    problem = format_problem(previous) if previous is not None else None
    if problem:  # written by a newer lit_bench: neither skipped, resumed nor replaced by this one
        return failed(base, f"{run_dir.summary}: {problem}; nothing was changed")
    if held is not None and config_hash(held) != base["config_hash"]:
        # Only possible when the composed defaults changed since that run (or for runs of an older layout).
        return failed(
            base,
            f"{run_dir.root} holds a {(previous or {}).get('status', 'started')} run of another "
            f"config (config_id {config_id(held)}, this one {base['config_id']}); nothing was "
            f"changed: use another sweep= or move it",
        )
    # a completed run is skipped before the checks: a logger it would need only to train again is not required
    batched = bool(cfg.get(BATCHED))
    start = decide(
        run_dir, previous, held, backend=str(cfg.backend), budget=None, force=bool(cfg.force), batched=batched
    )
    if start.action == "damaged":  # finished work that does not check out: the user's to look at, never retrained
        assert start.damage is not None
        return {**base, "status": "damaged", "error": left_damaged(run_dir, start.damage), "traceback": None}
    if start.action != "skip":
        try:
            algo_cls, budget = prepare(cfg)
        except ConfigError as error:
            return record_config_error(run_dir, failed(base, str(error)), previous)
        other = other_kind_of_checkpoint(run_dir, batched)
        if other is not None and not cfg.force:  # never resumed, never wiped unasked
            return failed(base, other)
        start = decide(
            run_dir, previous, held, backend=str(cfg.backend), budget=budget, force=bool(cfg.force), batched=batched
        )
    if start.action == "skip":
        assert previous is not None
        if previous["status"] == "pruned":  # the same config asked again: pruned again, without training
            return {**base, **previous}
        try:
            check_objective(cfg.objective)  # (prepare checks it for a run that trains; this one is scored too)
        except ConfigError as error:
            return failed(base, str(error))  # the completed run is left as it is
        return {
            **base,
            **previous,
            "status": "skipped",
            "objective": stats.objective(run_dir.eval_rows(), str(cfg.objective.metric), cfg.objective.get("last")),
            "note": not_retrained(held or {}, config, run_dir),
        }
    torch.set_num_threads(int(cfg.threads))
    open_run_dir(run_dir, config, start)
    warn_budget(cfg, budget)
    summary = {**base, "status": "running", "resumed_from": start.step, **provenance(config["env"])}
    run_dir.write_summary(summary)
    return Opened(run_dir, summary, algo_cls, budget, start, started)
