"""Lightning's fit loop counted in env steps, and lean where nothing listens (patches 1-4 of
:mod:`lit_sb3.lightning_compat`).

- :class:`EnvStepFitLoop` (subclasses the private ``_FitLoop``): each epoch calls only the epoch hooks something
  overrides and iterates the module's own sized iterable through :class:`_OneIterableFetcher` (a
  ``_PrefetchDataFetcher``) instead of a new ``CombinedLoader`` iterator per epoch.
- :class:`EnvStepEpochLoop` (subclasses ``_TrainingEpochLoop``): ``trainer.global_step`` (``ModelCheckpoint``'s
  ``{step}``, checkpoints' ``global_step``) and the step every Lightning callback logs at are the env-step count
  (``_batches_that_stepped``); its training step calls only the hooks something overrides
  (:mod:`lit_sb3.lightning_compat.hook_calls`).
- :class:`_EnvStepManualOptimization` (subclasses ``_ManualOptimization``): calls ``training_step`` directly where the
  strategy would only forward to it.

Why private: Lightning has no public hook for "the step is not the optimizer step" nor for skipping hook calls. What
each method replaces is Lightning's method of the same name (Lightning 2.6.0-2.6.6; see the package's version notes).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import lightning as L
from lightning.fabric.utilities.data import _set_sampler_epoch, sized_len
from lightning.pytorch.loops import _FitLoop
from lightning.pytorch.loops.fetchers import _DataFetcher, _DataLoaderIterDataFetcher, _PrefetchDataFetcher
from lightning.pytorch.loops.optimization.manual import _ManualOptimization
from lightning.pytorch.loops.training_epoch_loop import _TrainingEpochLoop
from lightning.pytorch.trainer import call
from lightning.pytorch.utilities.combined_loader import CombinedLoader
from lightning.pytorch.utilities.exceptions import SIGTERMException
from torch.utils.data import DataLoader

from lit_sb3.lightning_compat import hook_calls


def env_steps(trainer: L.Trainer) -> int | None:
    """The env steps of ``trainer``'s module (its ``num_timesteps``), or None for a module that counts none."""
    steps = getattr(trainer.lightning_module, "num_timesteps", None)  # an RL module's env-step count
    return None if steps is None else int(steps)


class EnvStepFitLoop(_FitLoop):
    """Lightning's fit loop, leaner per epoch where that is safe (:func:`hook_calls.lean_fit`): it calls only the
    epoch hooks something overrides and iterates the module's own sized iterable without a new CombinedLoader iterator
    per epoch. An on-policy epoch is one rollout: A2C's take ~5-10 ms, and Lightning's epoch machinery ~1 ms of that.
    Otherwise (several processes, a profiler, validation inside the fit, schedulers, a resumed epoch) Lightning's."""

    epoch_loop: EnvStepEpochLoop

    def __init__(self, trainer: L.Trainer) -> None:
        super().__init__(trainer, min_epochs=None, max_epochs=-1)
        self.epoch_loop = EnvStepEpochLoop(trainer, min_steps=None, max_steps=-1)
        self.lean: hook_calls.Listeners | None = None

    def setup_data(self) -> None:
        super().setup_data()
        loader = self._combined_loader
        if type(self._data_fetcher) is _PrefetchDataFetcher and loader is not None and _OneIterableFetcher.fits(loader):
            self._data_fetcher = fetcher = _OneIterableFetcher()
            fetcher.setup(loader)
            iter(fetcher)

    def on_run_start(self) -> None:
        super().on_run_start()
        self.lean = hook_calls.lean_fit(self.trainer)

    def _lean_now(self) -> hook_calls.Listeners | None:
        return None if self.restarting else self.lean

    def on_advance_start(self) -> None:
        listening = self._lean_now()
        if listening is None:
            return super().on_advance_start()
        self.setup_data()  # reload_dataloaders_every_n_epochs
        assert self._combined_loader is not None  # setup_data made it
        processed = self.epoch_progress.current.processed  # type: ignore[attr-defined]  # a _ProcessedTracker
        for dataloader in self._combined_loader.flattened:
            _set_sampler_epoch(dataloader, processed)
        self.epoch_progress.increment_ready()
        _call_hook(self.trainer, "on_train_epoch_start", listening)
        self.epoch_progress.increment_started()

    def advance(self) -> None:
        loader, fetcher = self._combined_loader, self._data_fetcher
        if self._lean_now() is None or loader is None or fetcher is None or loader._mode == "sequential":
            return super().advance()
        self.epoch_loop.run(fetcher)

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

    manual_optimization: _EnvStepManualOptimization
    stepped_batches: int  # Lightning's own count of training steps (set through ``_batches_that_stepped``)

    def __init__(self, trainer: L.Trainer, min_steps: int | None = None, max_steps: int = -1) -> None:
        super().__init__(trainer, min_steps=min_steps, max_steps=max_steps)
        self.manual_optimization = _EnvStepManualOptimization(trainer)

    @property
    def global_step(self) -> int:
        steps = env_steps(self.trainer)
        return super().global_step if steps is None else steps

    @property
    def _batches_that_stepped(self) -> int:
        steps = env_steps(self.trainer)
        return self.stepped_batches if steps is None else steps

    @_batches_that_stepped.setter
    def _batches_that_stepped(self, value: int) -> None:
        """Lightning counts its training steps with ``+= 1`` (and ``-= 1`` / ``+= 1`` around the epoch-end metrics)
        on what the getter returns, the env step: its own count (``log_every_n_steps``) takes the change."""
        steps = env_steps(self.trainer)
        self.stepped_batches = value if steps is None else self.stepped_batches + value - steps

    def load_state_dict(self, state_dict: dict[str, Any], prefix: str = "") -> None:
        super().load_state_dict(state_dict, prefix)
        self.stepped_batches = state_dict.get("_batches_that_stepped", 0)  # the count, not a change of it

    def state_dict(self, destination: dict[str, Any] | None = None, prefix: str = "") -> dict[str, Any]:
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

    def advance(self, kwargs: OrderedDict[str, Any]) -> None:
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
        assert self.iterator is not None and self.length is not None  # __iter__ set them
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
            length = len(loader.flattened[0])
            if loader.limits is not None and loader.limits[0] < length:  # a limit is an int or inf
                length = int(loader.limits[0])
            self.length = length
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


def _call_hook(trainer: L.Trainer, hook: str, listening: hook_calls.Listeners, *args: Any) -> Any:
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
