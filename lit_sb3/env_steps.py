"""Lightning counts optimizer steps; an RL run counts env steps. These pieces make Lightning's step the env step.

- :class:`EnvStepEpochLoop`: ``trainer.global_step`` (``ModelCheckpoint``'s ``{step}``, checkpoints' ``global_step``)
  and the step every Lightning callback logs at (``LearningRateMonitor``, ...) are the env-step count. Its training
  step, and each epoch of :class:`EnvStepFitLoop`, call only the hooks that something overrides
  (:mod:`lit_sb3.common.lightning_calls`).
- :class:`EnvStepLoggerConnector`: ``log_every_n_steps`` keeps counting Lightning training steps (how often), only
  the x-axis changed (where).
- :class:`EnvStepMonitors`: ``ModelCheckpoint(every_n_train_steps=N)`` saves when the env-step count crosses a
  multiple of ``N``; ``EarlyStopping`` checks each new value of its metric in runs whose epochs never end.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import lightning as L
from lightning.fabric.utilities.data import _set_sampler_epoch, sized_len
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping, ModelCheckpoint
from lightning.pytorch.loops import _FitLoop
from lightning.pytorch.loops.fetchers import _DataFetcher, _DataLoaderIterDataFetcher, _PrefetchDataFetcher
from lightning.pytorch.loops.optimization.manual import _ManualOptimization
from lightning.pytorch.loops.training_epoch_loop import _TrainingEpochLoop
from lightning.pytorch.trainer import call
from lightning.pytorch.trainer.connectors.logger_connector import _LoggerConnector
from lightning.pytorch.utilities.combined_loader import CombinedLoader
from lightning.pytorch.utilities.exceptions import SIGTERMException
from torch.utils.data import DataLoader

from lit_sb3.common import lightning_calls


def _env_steps(trainer: L.Trainer) -> int | None:
    steps = getattr(trainer.lightning_module, "num_timesteps", None)  # an RL module's env-step count
    return None if steps is None else int(steps)


class EnvStepFitLoop(_FitLoop):
    """Lightning's fit loop, leaner per epoch where that is safe (:func:`lightning_calls.lean_fit`): it calls only the
    epoch hooks something overrides and iterates the module's own sized iterable without a new CombinedLoader iterator
    per epoch. An on-policy epoch is one rollout: A2C's take ~5-10 ms, and Lightning's epoch machinery ~1 ms of that.
    Otherwise (several processes, a profiler, validation inside the fit, schedulers, a resumed epoch) Lightning's."""

    def __init__(self, trainer: L.Trainer) -> None:
        super().__init__(trainer, min_epochs=None, max_epochs=-1)
        self.epoch_loop = EnvStepEpochLoop(trainer, min_steps=None, max_steps=-1)
        self.lean: lightning_calls.Listeners | None = None

    def setup_data(self) -> None:
        super().setup_data()
        if type(self._data_fetcher) is _PrefetchDataFetcher and _OneIterableFetcher.fits(self._combined_loader):
            self._data_fetcher = _OneIterableFetcher()
            self._data_fetcher.setup(self._combined_loader)
            iter(self._data_fetcher)

    def on_run_start(self) -> None:
        super().on_run_start()
        self.lean = lightning_calls.lean_fit(self.trainer)

    def _lean_now(self) -> lightning_calls.Listeners | None:
        return None if self.restarting else self.lean

    def on_advance_start(self) -> None:
        listening = self._lean_now()
        if listening is None:
            return super().on_advance_start()
        self.setup_data()  # reload_dataloaders_every_n_epochs
        for dataloader in self._combined_loader.flattened:
            _set_sampler_epoch(dataloader, self.epoch_progress.current.processed)
        self.epoch_progress.increment_ready()
        _call_hook(self.trainer, "on_train_epoch_start", listening)
        self.epoch_progress.increment_started()

    def advance(self) -> None:
        if self._lean_now() is None or self._combined_loader._mode == "sequential":
            return super().advance()
        self.epoch_loop.run(self._data_fetcher)

    def on_advance_end(self) -> None:
        """Lightning's epoch end: callbacks that monitor a metric run after the module's hook, which logs it."""
        listening = self._lean_now()
        if listening is None:
            return super().on_advance_end()
        trainer = self.trainer
        trainer._logger_connector.epoch_end_reached()
        self.epoch_progress.increment_processed()
        _call_hook(trainer, "on_train_epoch_end", listening)
        trainer._logger_connector.on_epoch_end()
        self.epoch_loop._batches_that_stepped -= 1  # epoch metrics are logged at the last training step's step
        trainer._logger_connector.update_train_epoch_metrics()
        self.epoch_loop._batches_that_stepped += 1
        self.epoch_progress.increment_completed()
        if trainer.received_sigterm:
            raise SIGTERMException


class EnvStepEpochLoop(_TrainingEpochLoop):
    """Lightning's training loop whose ``global_step`` and logging step are the module's env-step count."""

    def __init__(self, trainer: L.Trainer, min_steps: int | None = None, max_steps: int = -1) -> None:
        super().__init__(trainer, min_steps=min_steps, max_steps=max_steps)
        self.manual_optimization = _EnvStepManualOptimization(trainer)

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
        """Lightning counts its training steps with ``+= 1`` (and ``-= 1`` / ``+= 1`` around the epoch-end metrics)
        on what the getter returns, the env step: its own count (``log_every_n_steps``) takes the change."""
        steps = _env_steps(self.trainer)
        self.stepped_batches = value if steps is None else self.stepped_batches + value - steps

    def load_state_dict(self, state_dict: dict, prefix: str = "") -> None:
        super().load_state_dict(state_dict, prefix)
        self.stepped_batches = state_dict.get("_batches_that_stepped", 0)  # the count, not a change of it

    def state_dict(self, destination: dict | None = None, prefix: str = "") -> dict:
        state = super().state_dict(destination, prefix)
        state["_batches_that_stepped"] = self.stepped_batches
        return state

    def on_run_start(self, data_fetcher: _DataFetcher) -> None:
        super().on_run_start(data_fetcher)
        fit_loop = self.trainer.fit_loop
        lean = getattr(fit_loop, "lean", None) if isinstance(fit_loop, EnvStepFitLoop) else None
        if self.restarting or isinstance(data_fetcher, _DataLoaderIterDataFetcher):
            lean = None
        self._listeners = lean
        self.manual_optimization.direct = lean is not None and lean.direct_step

    def advance(self, data_fetcher: _DataFetcher) -> None:
        """Lightning's training step, calling only the hooks something overrides (see :class:`EnvStepFitLoop`;
        otherwise Lightning's own ``advance``)."""
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
        response = _call_hook(trainer, "on_train_batch_start", listening, batch, batch_idx)
        if response == -1:
            progress.increment_by(0, is_last_batch=True)
            progress.increment_processed()
            raise StopIteration
        progress.increment_started()
        kwargs = OrderedDict(batch=batch, batch_idx=batch_idx) if listening.batch_idx else OrderedDict(batch=batch)
        batch_output = self.manual_optimization.run(kwargs)  # no profiler in a lean fit
        progress.increment_processed()
        _call_hook(trainer, "on_train_batch_end", listening, batch_output, batch, batch_idx)
        trainer._logger_connector.on_batch_end()
        progress.increment_completed()
        trainer._logger_connector.update_train_step_metrics()

    def on_advance_end(self, data_fetcher: _DataFetcher) -> None:
        """Lightning's, less what a lean fit does not have: validation, schedulers and gradient accumulation (manual
        optimization)."""
        if getattr(self, "_listeners", None) is None:
            return super().on_advance_end(data_fetcher)
        self._batches_that_stepped += 1
        self._save_loggers_on_train_batch_end()
        if not self._is_training_done and self.trainer.received_sigterm:
            raise SIGTERMException


class _EnvStepManualOptimization(_ManualOptimization):
    """Lightning's manual-optimization step; in a lean fit it calls the module's ``training_step`` itself where the
    strategy's would only forward to it (same precision context and ``self.log`` context)."""

    direct = False

    def advance(self, kwargs: OrderedDict) -> None:
        if not self.direct:
            return super().advance(kwargs)
        trainer = self.trainer
        with trainer.precision_plugin.train_step_context():
            output = _call_module_hook(trainer, "training_step", *kwargs.values())
        self._output = self.output_result_cls.from_training_step_output(output).asdict()


class _OneIterableFetcher(_PrefetchDataFetcher):
    """Lightning's fetcher over a CombinedLoader of one sized iterable (the module's own), without building the
    loader's iterator anew each epoch: it yields what that iterator would, ``(batch, index, 0)``, and, the length being
    known, fetches nothing ahead (as Lightning's fetcher does for sized iterables)."""

    @staticmethod
    def fits(loader: CombinedLoader | None) -> bool:
        if loader is None or loader._mode != "max_size_cycle" or len(loader.flattened) != 1:
            return False
        iterable = loader.flattened[0]
        return loader._spec.is_leaf() and not isinstance(iterable, DataLoader) and sized_len(iterable) is not None

    def __iter__(self) -> _OneIterableFetcher:
        self.iterator = iter(self.combined_loader.flattened[0])
        self._index = 0
        self.reset()
        return self

    def __next__(self) -> tuple[Any, int, int]:
        if self.done:
            raise StopIteration
        self._start_profiler()
        try:
            batch = next(self.iterator)
        except StopIteration:
            self.done = True
            raise
        finally:
            self._stop_profiler()
        self.fetched += 1
        self.done = self.fetched >= self.length
        self._index += 1
        return batch, self._index - 1, 0

    def reset(self) -> None:
        self.fetched = 0
        self.batches = []
        loader = self._combined_loader
        if loader is not None:
            self.length = len(loader.flattened[0])
            if loader.limits is not None:
                self.length = min(self.length, loader.limits[0])
            self.done = self.length == 0


def _call_module_hook(trainer: L.Trainer, hook: str, *args: Any) -> Any:
    """Lightning's call of a module hook in a lean fit (no profiler): the hook, with the module's ``_current_fx_name``
    (what ``self.log`` reads) set around it, less the debug string and profiler context of each call."""
    module = trainer.lightning_module
    previous = module._current_fx_name
    _set_fx_name(module, hook)
    output = getattr(module, hook)(*args)
    _set_fx_name(module, previous)
    return output


def _set_fx_name(module: L.LightningModule, name: str | None) -> None:
    # a plain attribute (no parameter, buffer or submodule): nn.Module.__setattr__'s checks cost ~3 us a write
    object.__setattr__(module, "_current_fx_name", name)


def _call_hook(trainer: L.Trainer, hook: str, listening: lightning_calls.Listeners, *args: Any) -> Any:
    """A training-loop hook, in Lightning's order (callbacks, module, strategy; at an epoch's end the callbacks that
    monitor a metric after the module), where something overrides it."""
    response, epoch_end = None, hook == "on_train_epoch_end"
    if hook in listening.callbacks:
        call._call_callback_hooks(trainer, hook, *args, monitoring_callbacks=False if epoch_end else None)
    if hook in listening.module:
        response = _call_module_hook(trainer, hook, *args)
    if epoch_end and hook in listening.callbacks:
        call._call_callback_hooks(trainer, hook, *args, monitoring_callbacks=True)
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
    def _nothing_logged(self) -> bool:
        results = self.trainer._results
        return results is not None and not results

    def on_batch_end(self) -> None:
        if self._nothing_logged():
            self.trainer._results.batch = None
            self.trainer._results.batch_size = None
            return
        super().on_batch_end()

    def update_train_step_metrics(self) -> None:
        if self._nothing_logged():
            return
        super().update_train_step_metrics()

    def on_epoch_end(self) -> None:
        if self._nothing_logged():
            self._current_fx = None
            return
        super().on_epoch_end()

    def update_train_epoch_metrics(self) -> None:
        if self._nothing_logged():
            self.reset_results()  # nothing to log or reset in an empty collection, only the connector's state
            return
        super().update_train_epoch_metrics()


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
