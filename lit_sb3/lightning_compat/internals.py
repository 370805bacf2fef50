"""The remaining private Lightning names lit_sb3 and lit_bench use, each behind one small function (patches 7-12
15 and 16 of :mod:`lit_sb3.lightning_compat`)."""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import lightning as L
from lightning.fabric.utilities import registry
from lightning.fabric.utilities.cloud_io import _load
from lightning.pytorch.core.optimizer import LightningOptimizer
from lightning.pytorch.strategies import Strategy
from lightning.pytorch.strategies.launchers.multiprocessing import _MultiProcessingLauncher


def attached_trainer(module: L.LightningModule) -> L.Trainer | None:
    """The trainer ``module`` is attached to, or None (patch 7).

    Replaces reading ``module.trainer``, which raises when no trainer is attached; ``_trainer`` is the attribute
    behind it (``LightningModule``, Lightning 2.6)."""
    return module._trainer


def load_checkpoint_file(path: Any, map_location: Any = None, weights_only: bool | None = None) -> Any:
    """A checkpoint file read as Lightning reads it (local paths and fsspec URLs; patch 8).

    ``lightning.fabric.utilities.cloud_io._load`` is what ``LightningModule.load_from_checkpoint`` calls; the public
    ``lightning.fabric.utilities.cloud_io`` has no loader of its own. ``weights_only`` is passed through."""
    return _load(path, map_location=map_location, weights_only=weights_only)


def spawns_processes(strategy: Strategy) -> bool:
    """Whether ``strategy`` starts its processes with ``multiprocessing`` (``ddp_spawn``, ``ddp_notebook``; patch 9).

    Lightning exposes the launcher (``strategy.launcher``) but not its kind; ``_MultiProcessingLauncher`` is the
    class of those launchers (Lightning 2.6)."""
    return isinstance(getattr(strategy, "launcher", None), _MultiProcessingLauncher)


@contextlib.contextmanager
def callback_entry_points(read: Callable[..., Any]) -> Iterator[None]:
    """Within the block, Lightning reads installed packages' callback factories through ``read`` (patch 10).

    ``Trainer.__init__`` calls ``lightning.fabric.utilities.registry.entry_points`` (a module attribute, not a
    private name, but patched here: the module is internal) for every trainer; ``RLTrainer`` reads them once."""
    original = registry.entry_points
    registry.entry_points = read
    try:
        yield
    finally:
        registry.entry_points = original


def step_between_counters(optimizer: LightningOptimizer) -> None:
    """The wrapped optimizer's own ``step()``, between Lightning's step-progress counters (patch 11).

    Replaces ``LightningOptimizer.step``, which also goes through the precision plugin and the strategy (nothing to
    do in one process without a scaler). ``_on_before_step`` / ``_on_after_step`` are the progress hooks that
    ``LightningOptimizer.step`` calls around the step (Lightning 2.6)."""
    optimizer._on_before_step()
    optimizer.optimizer.step()
    optimizer._on_after_step()


def save_hyperparameters_of_caller(module: L.LightningModule, ignore: Sequence[str]) -> None:
    """``module.save_hyperparameters`` again, collected from the frame that called the caller of this function
    (patch 12).

    ``save_hyperparameters`` finds the constructor arguments by walking the stack out from the base class's
    ``__init__``, through every ``__init__`` that calls ``super().__init__``; it stops at a frame that is no
    ``__init__``, such as the decorator that lets an algorithm take SB3's call form
    (:func:`lit_sb3.common.sb3_calls.accepts_sb3_constructor_form`). When a subclass's ``__init__`` called a
    decorated one (DDPG's TD3, a user's subclass), the walk restarts from that subclass's frame, so ``hparams``
    hold the arguments of the class actually built, and only those: ``load_from_checkpoint`` passes every one back
    to it (the decorated ``__init__`` takes ``**kwargs``, so Lightning does not filter them)."""
    here = inspect.currentframe()
    caller = here.f_back.f_back if here is not None and here.f_back is not None else None
    if caller is None:
        return
    module.hparams.clear()  # save_hyperparameters adds to what the base class's __init__ saved
    module.save_hyperparameters(ignore=list(ignore), frame=caller)


@contextlib.contextmanager
def child_rank_failures(on_failure: Callable[[str], None]) -> Iterator[None]:
    """Inside, a further rank that Lightning's subprocess launcher started and that exits with an error is reported
    to ``on_failure(what)`` (``what``: which ranks exited with which codes), after the other ranks were signalled,
    instead of this process being SIGKILLed (patch 15).

    Lightning's ``subprocess_script`` launcher watches the processes it starts with a ``_ChildProcessObserver``
    (``_launch_process_observer``) that kills every process, this one included, when one of them fails: this process
    may be waiting for that rank where it cannot notice (e.g. in the rendezvous), and would end with exit code 137.
    ``on_failure`` runs in the observer's thread and should end this process (the main thread may be blocked in a
    collective). Once the context is left, an observer started inside leaves this process alone."""
    from lightning.fabric.strategies.launchers.subprocess_script import _ChildProcessObserver
    from lightning.pytorch.strategies.launchers import subprocess_script

    active, lock = True, threading.Lock()

    class Watcher(_ChildProcessObserver):
        def _terminate_all(self) -> None:
            failed = [
                f"rank {i + 1} exited with code {child.returncode}"
                for i, child in enumerate(self._child_processes)
                if child.returncode
            ]
            for child in self._child_processes:
                child.send_signal(self._termination_signal)
            with lock:
                if active:
                    on_failure(", ".join(failed))

    launch = subprocess_script._launch_process_observer
    subprocess_script._launch_process_observer = lambda child_processes: Watcher(
        main_pid=os.getpid(), child_processes=child_processes
    ).start()
    try:
        yield
    finally:
        subprocess_script._launch_process_observer = launch
        with lock:
            active = False


def checkpoint_contents(trainer: L.Trainer, weights_only: bool) -> dict[str, Any]:
    """What ``trainer.save_checkpoint`` would write, without its barrier (patch 16): for a file that only rank 0
    writes while the other ranks carry on (lit_bench's best model, saved at rank 0's evaluations).

    ``Trainer.save_checkpoint`` waits at a barrier for every rank; ``_checkpoint_connector.dump_checkpoint`` is what
    it writes (Lightning 2.6), and Lightning has no public call for the dictionary alone."""
    return trainer._checkpoint_connector.dump_checkpoint(weights_only=weights_only)
