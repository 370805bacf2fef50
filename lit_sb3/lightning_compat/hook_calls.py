"""Lightning's per-step hook calls, made only where something listens to them (patch 13 of
:mod:`lit_sb3.lightning_compat`).

Each Lightning hook call costs tens of microseconds whether or not anything overrides the hook (a debug-log string,
a profiler context, two attribute writes on the module, a pass over every callback), and a manual update makes about
fifteen of them per ``training_step``. PPO with minibatches of 64 on a 4,096-step rollout runs 256 training steps per
rollout; there those calls cost more than fused Adam saves; A2C pays the epoch's share on every 5-step rollout.
:func:`listeners` finds once per fit which hooks a callback, the module or the strategy overrides; the training loops
(:mod:`lit_sb3.lightning_compat`) and the algorithms' updates (:func:`backward`, :func:`step`) skip the others and
otherwise do what Lightning does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lightning as L
import torch
from lightning.pytorch.core.optimizer import LightningOptimizer
from lightning.pytorch.plugins.precision import MixedPrecision, Precision
from lightning.pytorch.profilers import PassThroughProfiler
from lightning.pytorch.strategies import SingleDeviceStrategy, Strategy
from lightning.pytorch.utilities.model_helpers import is_overridden
from lightning.pytorch.utilities.signature_utils import is_param_in_hook_signature

from lit_sb3.lightning_compat.internals import attached_trainer, step_between_counters

#: hooks of the training loop and of a manual update that may be skipped when nothing overrides them
HOOKS = (
    "on_train_epoch_start",
    "on_train_epoch_end",
    "on_train_batch_start",
    "on_train_batch_end",
    "on_before_batch_transfer",
    "transfer_batch_to_device",
    "on_after_batch_transfer",
    "on_before_backward",
    "on_after_backward",
    "on_before_optimizer_step",
)
_UPDATE_HOOKS = ("on_before_backward", "on_after_backward", "on_before_optimizer_step")


def batch_already_on_device(method: Any) -> Any:
    """Marks a ``transfer_batch_to_device`` that returns the batch as it is (its data is on the module's device)."""
    method.batch_already_on_device = True
    return method


@dataclass(frozen=True)
class Listeners:
    """Which per-step hooks of a fit something overrides, and what may therefore be called directly."""

    callbacks: frozenset[str]  # hooks at least one callback overrides
    module: frozenset[str]  # hooks the LightningModule overrides (a pass-through batch transfer does not count)
    strategy: frozenset[str]  # training-loop hooks the strategy overrides
    batch_idx: bool  # training_step takes a batch_idx
    batch_transfer: bool  # batches go through the batch-transfer hooks (else they are used as the iterable yields them)
    direct_update: bool  # backward and optimizer step may run as plain torch calls (see ``backward`` / ``step``)
    direct_step: bool  # the strategy's training step would only call the module's (no wrapper, not overridden)


def listeners(trainer: L.Trainer) -> Listeners:
    """The :class:`Listeners` of ``trainer``'s current fit, computed once per (module, callbacks, strategy) set."""
    callbacks: list[L.Callback] = trainer.callbacks  # type: ignore[attr-defined]  # set by Lightning's connector
    module, strategy = trainer.lightning_module, trainer.strategy
    key = (id(module), id(strategy), id(strategy.precision_plugin), *map(id, callbacks))
    cached = getattr(trainer, "_lit_listeners", None)
    if cached is not None and cached[0] == key:
        known: Listeners = cached[1]
        return known
    transfer = getattr(type(module), "transfer_batch_to_device", None)
    in_module = {
        hook
        for hook in HOOKS
        if is_overridden(hook, module, L.LightningModule)
        and not (hook == "transfer_batch_to_device" and getattr(transfer, "batch_already_on_device", False))
    }
    in_callbacks = {hook for hook in HOOKS for callback in callbacks if is_overridden(hook, callback, L.Callback)}
    in_strategy = {hook for hook in ("on_train_batch_start",) if is_overridden(hook, strategy, Strategy)}
    # Lightning's default transfer moves tensors to the device: nothing to do on the CPU, or for batches that are there
    on_device = strategy.root_device.type == "cpu" or getattr(transfer, "batch_already_on_device", False)
    batch_transfer = not on_device or bool(
        in_module & {"on_before_batch_transfer", "transfer_batch_to_device", "on_after_batch_transfer"}
    )
    plugin = strategy.precision_plugin
    plain_precision = type(plugin) is Precision or (type(plugin) is MixedPrecision and plugin.scaler is None)
    direct = (
        type(strategy) is SingleDeviceStrategy
        and plain_precision
        and not is_overridden("backward", module, L.LightningModule)
        and not any(hook in in_module or hook in in_callbacks for hook in _UPDATE_HOOKS)
    )
    direct_step = strategy.model is module and not any(
        is_overridden(hook, strategy, Strategy) for hook in ("training_step", "post_training_step")
    )
    found = Listeners(
        frozenset(in_callbacks),
        frozenset(in_module),
        frozenset(in_strategy),
        is_param_in_hook_signature(module.training_step, "batch_idx", min_args=2),
        batch_transfer,
        direct,
        direct_step,
    )
    trainer._lit_listeners = (key, found)  # type: ignore[attr-defined]  # the cache lives with its trainer
    return found


def lean_fit(trainer: L.Trainer) -> Listeners | None:
    """The :class:`Listeners` of ``trainer``'s fit where its loops may call only the hooks something overrides: one
    process, manual optimization, no learning-rate scheduler, no profiler and no validation inside the fit (None
    otherwise: Lightning's own loops run)."""
    lean = (
        trainer.world_size == 1
        and not trainer.lightning_module.automatic_optimization
        and not trainer.lr_scheduler_configs
        and isinstance(trainer.profiler, PassThroughProfiler)  # type: ignore[attr-defined]  # set by Trainer.__init__
        and not trainer.enable_validation
    )
    return listeners(trainer) if lean else None


def _direct(module: L.LightningModule) -> bool:
    trainer = attached_trainer(module)
    return trainer is not None and listeners(trainer).direct_update


def backward(module: L.LightningModule, loss: torch.Tensor) -> None:
    """``module.manual_backward(loss)``; a plain ``loss.backward()`` where that is all it would do (one process, no
    gradient scaler, no backward hooks)."""
    if _direct(module):
        loss.backward()
    else:
        module.manual_backward(loss)


def step(module: L.LightningModule, optimizer: Any) -> None:
    """``optimizer.step()`` of a Lightning-wrapped optimizer; the wrapped optimizer's own step, between Lightning's
    step-progress counters, where the precision plugin and the strategy would add nothing."""
    if isinstance(optimizer, LightningOptimizer) and _direct(module):
        step_between_counters(optimizer)
    else:
        optimizer.step()
