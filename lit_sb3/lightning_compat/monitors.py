"""``ModelCheckpoint(every_n_train_steps=N)`` and ``EarlyStopping`` on env steps (patch 6 of
:mod:`lit_sb3.lightning_compat`).

:class:`EnvStepMonitors` drives the user's callbacks through their private methods: it takes over
``ModelCheckpoint._every_n_train_steps`` (Lightning's rule ``global_step % N == 0`` misses env-step counts that jump
by ``n_envs`` or a rollout) and saves with ``_should_skip_saving_checkpoint`` / ``_monitor_candidates`` /
``_save_topk_checkpoint`` / ``_save_last_checkpoint`` when the count crosses a multiple of ``N``; it runs
``EarlyStopping._run_early_stopping_check`` whenever the monitored metric has a new value (off-policy epochs never
end, and Lightning checks only at epoch ends). Lightning has no public call for "save now" or "check now".
"""

from __future__ import annotations

from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping, ModelCheckpoint


class EnvStepMonitors(Checkpoint):
    """Drives the env-step triggers of the user's ``ModelCheckpoint`` and ``EarlyStopping`` callbacks.

    A ``Checkpoint`` so that Lightning calls it after the module's epoch-end hook (where on-policy algorithms write
    their metrics), like the callbacks it drives. Saves happen after a whole update: at the end of a training step
    (off-policy, ARS) or of a rollout's epoch (on-policy).
    """

    def __init__(self, callbacks: list[Any]) -> None:
        self.every: list[tuple[ModelCheckpoint, int]] = []
        for callback in callbacks:
            if isinstance(callback, ModelCheckpoint) and callback._every_n_train_steps > 0:
                self.every.append((callback, callback._every_n_train_steps))
                callback._every_n_train_steps = 0  # its own rule (global_step % N == 0) misses irregular env steps
        self.early_stopping = [c for c in callbacks if isinstance(c, EarlyStopping)]
        self._saved_at = 0
        self._seen: dict[int, Any] = {}

    @property
    def state_key(self) -> str:
        return "EnvStepMonitors"

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._saved_at = trainer.global_step

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any) -> None:
        if not _epoch_is_rollout(pl_module):
            self._save_crossed(trainer)
            self._check_early_stopping(trainer)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if _epoch_is_rollout(pl_module):
            self._save_crossed(trainer)

    def _save_crossed(self, trainer: L.Trainer) -> None:
        steps = trainer.global_step
        for checkpoint, every in self.every:
            if steps // every > self._saved_at // every and not checkpoint._should_skip_saving_checkpoint(trainer):
                candidates = checkpoint._monitor_candidates(trainer)
                checkpoint._save_topk_checkpoint(trainer, candidates)
                checkpoint._save_last_checkpoint(trainer, candidates)
        self._saved_at = steps

    def _check_early_stopping(self, trainer: L.Trainer) -> None:
        """Epochs of off-policy runs never end: check each time the monitored metric has a new value."""
        for callback in self.early_stopping:
            value = trainer.callback_metrics.get(callback.monitor)
            if value is not None and value is not self._seen.get(id(callback)) and not trainer.should_stop:
                self._seen[id(callback)] = value
                callback._run_early_stopping_check(trainer)


def _epoch_is_rollout(module: L.LightningModule) -> bool:
    return getattr(module, "epoch_is_rollout", False)  # any LightningModule may run here, not only lit_sb3's
