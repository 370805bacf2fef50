"""Lightning counts optimizer steps; an RL run counts env steps. These pieces make Lightning's step the env step.

- :class:`EnvStepEpochLoop`: ``trainer.global_step`` (``ModelCheckpoint``'s ``{step}``, checkpoints' ``global_step``)
  and the step every Lightning callback logs at (``LearningRateMonitor``, ...) are the env-step count. Its training
  step calls only the hooks that something overrides (:mod:`lit_sb3.common.lightning_calls`).
- :class:`EnvStepLoggerConnector`: ``log_every_n_steps`` keeps counting Lightning training steps (how often), only
  the x-axis changed (where).
- :class:`EnvStepMonitors`: ``ModelCheckpoint(every_n_train_steps=N)`` saves when the env-step count crosses a
  multiple of ``N``; ``EarlyStopping`` checks each new value of its metric in runs whose epochs never end.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping, ModelCheckpoint
from lightning.pytorch.loops import _FitLoop
from lightning.pytorch.loops.fetchers import _DataFetcher, _DataLoaderIterDataFetcher
from lightning.pytorch.loops.training_epoch_loop import _TrainingEpochLoop
from lightning.pytorch.trainer import call
from lightning.pytorch.trainer.connectors.logger_connector import _LoggerConnector

from lit_sb3.common import lightning_calls


def _env_steps(trainer: L.Trainer) -> int | None:
    steps = getattr(trainer.lightning_module, "num_timesteps", None)  # an RL module's env-step count
    return None if steps is None else int(steps)


class EnvStepEpochLoop(_TrainingEpochLoop):
    """Lightning's training loop whose ``global_step`` and logging step are the module's env-step count."""

    @property
    def global_step(self) -> int:
        steps = _env_steps(self.trainer)
        return super().global_step if steps is None else steps

    @property
    def _batches_that_stepped(self) -> int:
        steps = _env_steps(self.trainer)
        return self.stepped_batches if steps is None else steps

    @_batches_that_stepped.setter
    def _batches_that_stepped(self, value: int) -> None:
        self.stepped_batches = value  # Lightning's own count of training steps, kept for the logging frequency

    def state_dict(self, destination: dict | None = None, prefix: str = "") -> dict:
        state = super().state_dict(destination, prefix)
        state["_batches_that_stepped"] = self.stepped_batches
        return state

    def on_run_start(self, data_fetcher: _DataFetcher) -> None:
        super().on_run_start(data_fetcher)
        trainer = self.trainer
        lean = (
            not self.restarting
            and not isinstance(data_fetcher, _DataLoaderIterDataFetcher)
            and trainer.world_size == 1
            and not trainer.lr_scheduler_configs
            and not trainer.lightning_module.automatic_optimization
        )
        self._listeners = lightning_calls.listeners(trainer) if lean else None

    def advance(self, data_fetcher: _DataFetcher) -> None:
        """Lightning's training step, calling only the hooks something overrides (one process, manual optimization,
        no learning-rate scheduler, not resuming mid-epoch; otherwise Lightning's own ``advance``)."""
        listening = getattr(self, "_listeners", None)
        if listening is None:
            return super().advance(data_fetcher)
        trainer = self.trainer
        progress = self.batch_progress
        batch, _, __ = next(data_fetcher)
        batch_idx = self.batch_idx + 1
        progress.is_last_batch = data_fetcher.done
        batch = trainer.precision_plugin.convert_input(batch)
        if listening.batch_transfer:
            batch = trainer.lightning_module._on_before_batch_transfer(batch, dataloader_idx=0)
            batch = call._call_strategy_hook(trainer, "batch_to_device", batch, dataloader_idx=0)
        progress.increment_ready()
        trainer._logger_connector.on_batch_start(batch)
        response = self._call("on_train_batch_start", listening, batch, batch_idx)
        if response == -1:
            progress.increment_by(0, is_last_batch=True)
            progress.increment_processed()
            raise StopIteration
        progress.increment_started()
        kwargs = OrderedDict(batch=batch, batch_idx=batch_idx) if listening.batch_idx else OrderedDict(batch=batch)
        with trainer.profiler.profile("run_training_batch"):
            batch_output = self.manual_optimization.run(kwargs)
        progress.increment_processed()
        self._call("on_train_batch_end", listening, batch_output, batch, batch_idx)
        trainer._logger_connector.on_batch_end()
        progress.increment_completed()
        trainer._logger_connector.update_train_step_metrics()

    def _call(self, hook: str, listening: lightning_calls.Listeners, *args: Any) -> Any:
        """A training-loop hook, in Lightning's order (callbacks, module, strategy), where something overrides it."""
        trainer, response = self.trainer, None
        if hook in listening.callbacks:
            call._call_callback_hooks(trainer, hook, *args)
        if hook in listening.module:
            response = call._call_lightning_module_hook(trainer, hook, *args)
        if hook in listening.strategy:
            call._call_strategy_hook(trainer, hook, *args)
        return response


class EnvStepLoggerConnector(_LoggerConnector):
    """``log_every_n_steps`` counts Lightning training steps, as in Lightning (the logged step is the env step)."""

    @property
    def should_update_logs(self) -> bool:
        trainer = self.trainer
        loop = trainer._active_loop
        if trainer.log_every_n_steps == 0 or not isinstance(loop, _FitLoop):
            return super().should_update_logs
        return (loop.epoch_loop.stepped_batches + 1) % trainer.log_every_n_steps == 0 or trainer.should_stop

    # lit_sb3's algorithms log through SB3's logger at the end of a rollout or log interval, never with ``self.log`` in
    # a training step: with nothing logged there is nothing to gather after each step.
    def on_batch_end(self) -> None:
        results = self.trainer._results
        if results is not None and not results:
            results.batch = None
            results.batch_size = None
            return
        super().on_batch_end()

    def update_train_step_metrics(self) -> None:
        results = self.trainer._results
        if results is not None and not results:
            return
        super().update_train_step_metrics()


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
    from lit_sb3.common.on_policy import OnPolicyAlgorithm

    return isinstance(module, OnPolicyAlgorithm)
