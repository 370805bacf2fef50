"""``log_every_n_steps`` in an env-step run, and no per-step gathering of nothing (patch 5 of
:mod:`lit_sb3.lightning_compat`).

:class:`EnvStepLoggerConnector` subclasses the private ``_LoggerConnector`` and replaces the trainer's connector in
place (:func:`install`): Lightning builds its connector in ``Trainer.__init__`` and offers no argument to choose it.
It replaces ``should_update_logs`` (Lightning counts ``trainer.global_step``, here the env step; the count of training
steps is the epoch loop's ``stepped_batches``) and skips ``on_batch_end`` / ``update_train_step_metrics`` /
``on_epoch_end`` / ``update_train_epoch_metrics`` when ``trainer._results`` holds nothing (lit_sb3's algorithms log
through SB3's logger, never with ``self.log`` in a training step).
"""

from __future__ import annotations

import lightning as L
from lightning.pytorch.trainer.connectors.logger_connector import _LoggerConnector
from lightning.pytorch.trainer.connectors.logger_connector.result import _ResultCollection

from lit_sb3.lightning_compat.loops import EnvStepFitLoop


def install(trainer: L.Trainer) -> None:
    """Make ``trainer``'s logger connector an :class:`EnvStepLoggerConnector` (same state, these methods)."""
    trainer._logger_connector.__class__ = EnvStepLoggerConnector


class EnvStepLoggerConnector(_LoggerConnector):
    """``log_every_n_steps`` counts Lightning training steps, as in Lightning (the logged step is the env step)."""

    @property
    def should_update_logs(self) -> bool:
        trainer = self.trainer
        loop = trainer._active_loop
        every: int = trainer.log_every_n_steps  # type: ignore[attr-defined]  # set by _LoggerConnector.on_trainer_init
        if every == 0 or not isinstance(loop, EnvStepFitLoop):
            return super().should_update_logs
        return (loop.epoch_loop.stepped_batches + 1) % every == 0 or trainer.should_stop

    # lit_sb3's algorithms log through SB3's logger at the end of a rollout or log interval, never with ``self.log`` in
    # a training step: with nothing logged there is nothing to gather after each step.
    def _empty_results(self) -> _ResultCollection | None:
        """The active loop's result collection when it holds nothing (else None)."""
        results = self.trainer._results
        return results if results is not None and not results else None

    def _nothing_logged(self) -> bool:
        return self._empty_results() is not None

    def on_batch_end(self) -> None:
        empty = self._empty_results()
        if empty is not None:
            empty.batch = None
            empty.batch_size = None
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
