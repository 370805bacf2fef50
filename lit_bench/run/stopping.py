"""The run's side of lit_bench.control.signals: callbacks that stop a training at a checkpoint boundary after a
signal, or after an Optuna pruner said stop (lit_bench.control.study).

Apart from lit_bench.control.signals, so that the processes that only start or report a sweep (a joblib parent) import
neither Lightning nor SB3.
"""

from __future__ import annotations

from typing import Any

import lightning as L
from stable_baselines3.common.callbacks import BaseCallback

from lit_bench.control import signals
from lit_bench.control.signals import Interrupted
from lit_bench.control.study import Pruned, prune_requested, stop_if_prune_requested


class LitStopOnSignal(L.Callback):
    """After ``checkpoint`` (a LitCheckpoint) in the callback list: at its boundaries, save and stop if signalled."""

    def __init__(self, checkpoint: Any) -> None:
        self.checkpoint = checkpoint

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        signals.reinstall()
        signals.stop_if_pending()
        stop_if_prune_requested()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        self._stop(trainer, pl_module)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        from lit_sb3.common.off_policy import OffPolicyAlgorithm

        if isinstance(pl_module, OffPolicyAlgorithm):  # an on-policy batch is a minibatch in mid-update
            self._stop(trainer, pl_module)

    def _stop(self, trainer: L.Trainer, pl_module: Any) -> None:
        signum, pruned = signals.pending(), prune_requested()
        if trainer.world_size > 1:  # a signal to any rank stops all at this boundary (the checkpoint is collective)
            import torch

            both = trainer.strategy.reduce(
                torch.tensor([signum or 0, -1 if pruned is None else pruned]), reduce_op="max"
            )
            signum, pruned = int(both[0]) or None, None if int(both[1]) < 0 else int(both[1])
        if signum is not None or pruned is not None:
            self.checkpoint.save(trainer, pl_module)
            _raise_stop(signum, pruned)


class SB3StopOnSignal(BaseCallback):
    """After ``checkpoint`` (an SB3Checkpoint): at the start of a rollout (the last update is done), save and stop."""

    def __init__(self, checkpoint: Any) -> None:
        super().__init__(verbose=0)
        self.checkpoint = checkpoint

    def _on_training_start(self) -> None:
        signals.stop_if_pending()
        stop_if_prune_requested()

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        signum, pruned = signals.pending(), prune_requested()
        if signum is not None or pruned is not None:
            self.checkpoint.save()
            _raise_stop(signum, pruned)


def _raise_stop(signum: int | None, pruned: int | None) -> None:
    """Stop the run after its checkpoint: for the signal, else for the pruner (at the env step it pruned)."""
    if signum is not None:
        raise Interrupted(signum)
    if pruned is not None:
        raise Pruned(pruned)
