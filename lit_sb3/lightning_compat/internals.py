"""The remaining private Lightning names lit_sb3 uses, each behind one small function (patches 7-12 of
:mod:`lit_sb3.lightning_compat`)."""

from __future__ import annotations

import contextlib
import inspect
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
