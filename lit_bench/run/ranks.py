"""Multi-process runs (``trainer.devices=N trainer.strategy=ddp``): one run directory, one writer.

Lightning starts ranks 1..N-1 by re-running the command line (``run.py ...``) when rank 0 calls ``fit``. Rank 0 is
the run: it names and locks the run directory, evaluates, and writes ``eval.csv``, checkpoints, metrics and the
summary. The other ranks only train: they read the plan rank 0 handed them (through the environment Lightning
copies to them: run directory, resume or not, checkpoint interval), join every collective step (updates, the
checkpoint barrier, the stop decision after a signal) and exit with an honest code (0, 1 on a failure, 128 + the
signal). A rank that fails takes the run down: the others' collective steps fail (or Lightning stops rank 0 when
a rank exits early), never a hang or an exit 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import torch
from omegaconf import DictConfig

from lit_bench.config.checks import ConfigError, check_before_training
from lit_bench.config.envs import make_envs
from lit_bench.control.signals import Interrupted
from lit_bench.run.backends import Job, train_lit
from lit_bench.store.rundir import RunDir
from lit_sb3.lightning_compat import child_rank_failures

PLAN_ENV = "LIT_BENCH_RANK_PLAN"  # set by rank 0 before fit; Lightning's launcher copies it to the other ranks


def process_rank() -> int:
    """This process's rank in a multi-process run started by Lightning's launcher (0 in a single-process run)."""
    return int(os.environ.get("LOCAL_RANK") or 0)  # one machine: the launcher numbers the processes it starts


def hand_plan(plan: dict[str, Any]) -> None:
    """Rank 0, before fit: what the other ranks need to follow it (they inherit this process's environment)."""
    os.environ[PLAN_ENV] = json.dumps(plan)


def received_plan() -> dict[str, Any]:
    text = os.environ.get(PLAN_ENV)
    if text is None:
        raise ConfigError(
            "trainer.devices: this process is rank > 0 of a multi-process run but rank 0 handed it no "
            "plan; start the run with python run.py ... trainer.devices=N (Lightning starts the ranks)"
        )
    return json.loads(text)


def run_rank(cfg: DictConfig) -> dict[str, Any]:
    """A further rank: train along with rank 0 and write nothing (after rank 0's checks:
    ``lit_bench.config.checks.check_before_training``); the summary says how it ended (``rank`` set)."""
    rank = process_rank()
    summary: dict[str, Any] = {
        "algo": str(cfg.algo_name),
        "env": str(cfg.env_name),
        "seed": cfg.seed,
        "backend": str(cfg.backend),
        "rank": rank,
        "status": "running",
    }
    train_env = eval_env = None
    try:
        plan = received_plan()
        algo_cls, budget = check_before_training(cfg)
        torch.set_num_threads(int(cfg.threads))  # as rank 0
        train_env, eval_env = make_envs(cfg.env, str(cfg.env_name), int(cfg.seed), cfg.algo.get("gamma"))
        job = Job(
            cfg=cfg,
            algo_cls=algo_cls,
            run=RunDir(plan["run_dir"]),
            train_env=train_env,
            evaluator=None,
            budget=budget,
            seed=int(cfg.seed),
            checkpoint_every=int(plan["checkpoint_every"]),
            resume=bool(plan["resume"]),
        )
        model = train_lit(job)
        summary.update(status="completed", timesteps=int(model.num_timesteps))
    except Interrupted as interrupt:
        summary.update(status="interrupted", signal=interrupt.signum)
        _wait_for_rank0()
    except ConfigError as error:
        print(f"rank {rank}: {error}", file=sys.stderr, flush=True)
        summary.update(status="failed", error=str(error))
    except Exception as error:  # the traceback goes to the console; rank 0 records the failed run
        print(f"rank {rank}: {type(error).__name__}: {error}\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        summary.update(status="failed", error=f"{type(error).__name__}: {error}")
    finally:
        for env in (train_env, eval_env):
            if env is not None:
                env.close()
    return summary


def _wait_for_rank0(timeout_s: float = 30.0) -> None:
    """After a signal every rank stops at the same checkpoint; exit after rank 0 (Lightning's launcher kills rank 0
    when a further rank exits with a non-zero code first, which would cut its summary short)."""
    rank0 = os.getppid()
    deadline = time.monotonic() + timeout_s
    while os.getppid() == rank0 and time.monotonic() < deadline:
        time.sleep(0.1)


def rank_exit_code(summary: dict[str, Any]) -> int:
    """0 for a completed rank, 128 + the signal for an interrupted one, 1 for a failed one."""
    if summary["status"] == "completed":
        return 0
    if summary["status"] == "interrupted":
        return 128 + int(summary["signal"])
    return 1


@contextlib.contextmanager
def failing_ranks_end_the_run(on_failure: Callable[[str], None]) -> Iterator[None]:
    """Rank 0, around ``fit``: a further rank that exits with an error ends the run as a failure (exit code 1).

    Lightning's launcher watches the processes it starts and SIGKILLs rank 0 when one of them exits with an error:
    rank 0 may be waiting for it where it cannot notice (e.g. in the rendezvous, when the rank failed before joining
    it), and the run would end with exit code 137 and a summary that still says running. Inside this context
    (``lit_sb3.lightning_compat.child_rank_failures``) the watcher calls ``on_failure(error)`` (record the failed run)
    and ends this process with exit code 1 instead. Once the context is left, this process records its own end and a
    failing rank's watcher leaves it alone.
    """

    def end_the_run(what: str) -> None:  # (in Lightning's observer thread: the main one may be in a collective)
        on_failure(f"{what} (its error is printed above); the run stopped")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)

    with child_rank_failures(end_the_run):
        yield
