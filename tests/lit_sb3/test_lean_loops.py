"""The lean training loops (lit_sb3.lightning_compat) do what Lightning's loops do, less calls nothing listens to."""

from __future__ import annotations

from typing import Any
from unittest import mock

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import Checkpoint
from lightning.pytorch.loggers import Logger
from lightning.pytorch.loops import _FitLoop

from lit_sb3 import A2C, RLEnvDataModule, RLTrainer
from lit_sb3.lightning_compat import hook_calls
from lit_sb3.lightning_compat.loops import _OneIterableFetcher

EPOCH_HOOKS = ("on_train_epoch_start", "on_train_batch_start", "on_train_batch_end", "on_train_epoch_end")


class _Recorder(L.Callback):
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def on_train_epoch_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.events.append("callback.on_train_epoch_start")

    def on_train_batch_start(self, trainer: L.Trainer, module: L.LightningModule, *args: Any) -> None:
        self.events.append("callback.on_train_batch_start")

    def on_train_batch_end(self, trainer: L.Trainer, module: L.LightningModule, *args: Any) -> None:
        self.events.append("callback.on_train_batch_end")

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.events.append("callback.on_train_epoch_end")


class _MonitoringRecorder(Checkpoint):
    """A monitoring callback: Lightning calls its epoch end after the module's (which logs what it monitors)."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.events.append("monitor.on_train_epoch_end")


class _RecordingA2C(A2C):
    events: list[str]

    def on_train_epoch_start(self) -> None:
        self.events.append("module.on_train_epoch_start")
        super().on_train_epoch_start()

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        self.events.append("module.on_train_batch_start")

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        self.events.append("module.on_train_batch_end")

    def on_train_epoch_end(self) -> None:
        self.events.append("module.on_train_epoch_end")
        super().on_train_epoch_end()


class _Spy(L.Callback):
    """What the fit looked like from inside: the lean plan and the fetcher."""

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self.lean = trainer.fit_loop.lean
        self.fetcher = type(trainer.fit_loop._data_fetcher)


class _LoggingA2C(A2C):
    """Logs with ``self.log`` in its training step and at each epoch's end (Lightning's metric gathering)."""

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        loss = super().training_step(batch, batch_idx)
        self.log("step_loss", loss)
        return loss

    def on_train_epoch_end(self) -> None:
        super().on_train_epoch_end()
        self.log("epoch_steps", float(self.num_timesteps), on_epoch=True)


class _RecordingLogger(Logger):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[dict[str, float], int | None]] = []

    @property
    def name(self) -> str:
        return "recording"

    @property
    def version(self) -> int:
        return 0

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.rows.append(({k: float(v) for k, v in metrics.items()}, step))


def _fit(model: A2C, callbacks: list[L.Callback], **kwargs: Any) -> RLTrainer:
    kwargs.setdefault("logger", False)
    trainer = RLTrainer(max_steps=60, enable_progress_bar=False, callbacks=callbacks, **kwargs)
    trainer.fit(model, datamodule=RLEnvDataModule(train_env="CartPole-v1", n_envs=2, seed=0))
    return trainer


def _count_lightning_epochs(monkeypatch) -> list[int]:
    """Counts the epochs that go through Lightning's own epoch start (the path the lean loop replaces)."""
    calls = [0]
    lightning_start = _FitLoop.on_advance_start

    def counted(self: _FitLoop) -> None:
        calls[0] += 1
        lightning_start(self)

    monkeypatch.setattr(_FitLoop, "on_advance_start", counted)
    return calls


def test_default_fit_takes_the_lean_path(monkeypatch):
    lightning_epochs = _count_lightning_epochs(monkeypatch)
    spy = _Spy()
    trainer = _fit(A2C("MlpPolicy", seed=0), [spy])
    assert trainer.current_epoch == 6  # 60 env steps in rollouts of 5 steps x 2 envs
    assert spy.lean is not None and spy.fetcher is _OneIterableFetcher
    assert lightning_epochs == [0]
    assert trainer.fit_loop.epoch_loop.manual_optimization.direct


def test_lean_path_calls_overridden_hooks_in_lightnings_order_with_lightnings_state(monkeypatch):
    """Callbacks and module hooks that something overrides still run, in the order and with the loop state (progress
    counters, steps) and results of Lightning's own loops."""
    runs = {}
    for path in ("lean", "lightning"):
        if path == "lightning":
            monkeypatch.setattr(hook_calls, "lean_fit", lambda trainer: None)
        events: list[str] = []
        model = _RecordingA2C("MlpPolicy", seed=0)
        model.events = events
        trainer = _fit(model, [_MonitoringRecorder(events), _Recorder(events)])
        runs[path] = events, trainer.fit_loop.state_dict(), trainer.global_step, model.policy.state_dict()
    (lean_events, lean_state, lean_step, lean_params), (events, state, step, params) = runs["lean"], runs["lightning"]
    assert lean_events == events
    assert events[:9] == [
        "callback.on_train_epoch_start",
        "module.on_train_epoch_start",
        "callback.on_train_batch_start",
        "module.on_train_batch_start",
        "callback.on_train_batch_end",
        "module.on_train_batch_end",
        "callback.on_train_epoch_end",
        "module.on_train_epoch_end",
        "monitor.on_train_epoch_end",
    ]
    assert lean_state == state and lean_step == step == 60
    assert all(torch.equal(lean_params[k], params[k]) for k in params)


def test_lean_path_logs_what_modules_log_with_self_log_as_lightning_does(monkeypatch):
    runs = {}
    for path in ("lean", "lightning"):
        if path == "lightning":
            monkeypatch.setattr(hook_calls, "lean_fit", lambda trainer: None)
        logger = _RecordingLogger()
        trainer = _fit(_LoggingA2C("MlpPolicy", seed=0), [], logger=logger, log_every_n_steps=1)
        runs[path] = logger.rows, {k: float(v) for k, v in trainer.callback_metrics.items()}
    assert runs["lean"] == runs["lightning"]
    rows, callback_metrics = runs["lean"]
    assert len([row for row, _ in rows if "step_loss" in row]) == 6  # one training step per rollout
    assert [row["epoch_steps"] for row, _ in rows if "epoch_steps" in row] == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    assert callback_metrics["epoch_steps"] == 60.0


@pytest.mark.parametrize("path", ["lean", "lightning"])
def test_log_every_n_steps_counts_training_steps(monkeypatch, path):
    """Lightning's meaning: every n training steps (here one per 10-step rollout), logged at the env step."""
    if path == "lightning":
        monkeypatch.setattr(hook_calls, "lean_fit", lambda trainer: None)
    logger = _RecordingLogger()
    trainer = _fit(_LoggingA2C("MlpPolicy", seed=0), [], logger=logger, log_every_n_steps=2)
    assert [step for row, step in logger.rows if "step_loss" in row] == [20, 40, 60]
    assert trainer.fit_loop.epoch_loop.state_dict()["_batches_that_stepped"] == 6


def test_lean_path_is_not_taken_with_a_profiler_or_several_processes(monkeypatch):
    lightning_epochs = _count_lightning_epochs(monkeypatch)
    spy = _Spy()
    _fit(A2C("MlpPolicy", seed=0), [spy], profiler="simple")
    assert spy.lean is None and lightning_epochs[0] == 6

    class _TwoProcesses(L.Callback):
        def on_train_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
            with mock.patch.object(RLTrainer, "world_size", new_callable=mock.PropertyMock, return_value=2):
                self.lean = hook_calls.lean_fit(trainer)

    two = _TwoProcesses()
    _fit(A2C("MlpPolicy", seed=0), [two])
    assert two.lean is None
