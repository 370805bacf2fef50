"""``RLTrainer``: a Lightning Trainer whose budget is env steps."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol, cast, runtime_checkable

import lightning as L
from lightning.pytorch.callbacks import Checkpoint, EarlyStopping, ModelCheckpoint
from lightning.pytorch.callbacks.progress.progress_bar import ProgressBar
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.trainer.states import RunningStage
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common.allow_list import is_trusted
from lit_sb3.common.safe_load import trusted_checkpoint
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.lightning_compat import EnvStepFitLoop, EnvStepMonitors, install, spawns_processes
from lit_sb3.lightning_compat.quiet import installed_callbacks_read_once, quiet_lightning
from lit_sb3.progress import EnvStepProgressBar

#: precisions whose update runs on float32 env data: full float32, or mixed precision (autocast) for the update only
SUPPORTED_PRECISIONS = ("32-true", "bf16-mixed", "16-mixed")
#: Lightning's ``training`` property, whose setter RLTrainer's override keeps
_LIGHTNING_TRAINING: property = vars(L.Trainer)["training"]


@runtime_checkable
class RLModule(Protocol):
    """What :class:`RLTrainer` needs of the module it runs (lit_sb3's ``BaseAlgorithm`` provides it)."""

    num_timesteps: int  #: env steps collected so far: the trainer's step and budget count these
    multi_process_update: ClassVar[bool]  #: its updates are gradient steps DDP can average over processes
    epoch_is_rollout: ClassVar[bool]  #: one Lightning epoch is one rollout (checkpoints and early stopping per epoch)

    def check_env(self, env: VecEnv) -> None:
        """Fail before training when ``env`` cannot be used."""

    def train_dataloader(self) -> Any:
        """The module's own iterable of training steps."""

    def prepare_run(self, total_timesteps: int, callback: MaybeCallback) -> None:
        """Take the fit's env-step budget and SB3 callback(s); the module stops the fit when the budget is spent."""


@runtime_checkable
class OwnEnvs(Protocol):
    """A module that trains on envs of its own (a seed group): ``RLTrainer.fit(module)`` needs no datamodule."""

    def fit_datamodule(self) -> RLEnvDataModule:
        """The datamodule holding the module's training env."""


class EvalEpisodes:
    """The evaluation "dataloader": one batch, the request ``(n_episodes, deterministic, ...)`` for the stage's env."""

    def __init__(self, request: tuple[Any, ...]) -> None:
        self.request = request

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        yield self.request

    def __len__(self) -> int:
        return 1


class RLTrainer(L.Trainer):
    """A :class:`lightning.Trainer` subclass that drives reinforcement-learning runs.

    All standard ``lightning.Trainer`` keyword arguments are accepted and forwarded. ``accelerator`` (CPU),
    ``enable_model_summary`` (off), ``enable_checkpointing`` (on exactly when a ``ModelCheckpoint`` is given),
    ``logger`` (CSV) and the progress bar (counts env steps) have RL defaults that the caller can override.
    Lightning's step is the env step: ``global_step``, ``ModelCheckpoint``'s ``{step}`` and ``every_n_train_steps``,
    and the step every callback logs at (see :mod:`lit_sb3.lightning_compat`). ``precision`` may be ``"32-true"``,
    ``"bf16-mixed"`` or ``"16-mixed"``; ``devices=N, strategy="ddp"`` trains on-policy algorithms in N processes.

    :param max_steps: total environment steps to collect (the RL timestep budget). Lightning's step-based stopping is
        disabled; the budget is enforced with env-step accounting instead.
    :param rl_callback: SB3-style callback(s) fired at each RL step
    :param run_name: the run name used in loggers
    """

    def __init__(
        self,
        max_steps: int | None = None,
        rl_callback: MaybeCallback = None,
        run_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"max_steps: the env-step budget must be > 0, got {max_steps}")
        for forbidden in ("max_epochs", "min_steps", "min_epochs", "max_time"):
            if forbidden in kwargs and kwargs[forbidden] not in (None, -1):
                raise ValueError(f"{forbidden}: RLTrainer budgets in env steps; use max_steps=<env steps>")
        self._rl_total_timesteps = int(max_steps or 0)
        self.rl_callback = rl_callback
        self.run_name = run_name
        kwargs.setdefault("accelerator", "cpu")
        kwargs.setdefault("devices", 1)
        kwargs.setdefault("enable_model_summary", False)
        callbacks = list(kwargs.pop("callbacks", None) or [])
        # Lightning would add a ModelCheckpoint of its own; RL runs save where the user asks, and only there
        user_checkpoints = any(isinstance(c, Checkpoint) for c in callbacks)
        kwargs.setdefault("enable_checkpointing", user_checkpoints)
        kwargs.setdefault("num_sanity_val_steps", 0)
        if "logger" not in kwargs or kwargs["logger"] is True:
            root = kwargs.get("default_root_dir") or os.getcwd()
            kwargs["logger"] = CSVLogger(save_dir=str(root), name=run_name or "lightning_logs")
        if kwargs.get("enable_progress_bar", True) and not any(isinstance(c, ProgressBar) for c in callbacks):
            callbacks.append(EnvStepProgressBar())
        if any(isinstance(c, (ModelCheckpoint, EarlyStopping)) for c in callbacks):
            callbacks.append(EnvStepMonitors(callbacks))
            if not user_checkpoints:  # Lightning refuses a Checkpoint callback otherwise; it adds none beside one
                kwargs["enable_checkpointing"] = True
        with quiet_lightning(), installed_callbacks_read_once():
            super().__init__(max_epochs=-1, max_steps=-1, callbacks=callbacks, **kwargs)
        if self.precision not in SUPPORTED_PRECISIONS:
            raise ValueError(
                f"precision: RLTrainer supports {', '.join(SUPPORTED_PRECISIONS)} (env data stays float32; SB3's "
                f"policies compute in float32, so 64-true and the *-true halves do not apply), got {self.precision!r}"
            )
        # env steps, not optimizer steps, are the step of checkpoints and of every logger (see lit_sb3.lightning_compat)
        self.fit_loop = EnvStepFitLoop(self)
        install(self)  # the logger connector's log_every_n_steps, on env steps

    @property
    def training(self) -> bool:
        """Lightning's ``training``, without its case-insensitive enum comparison where the stage is the enum member
        itself (Lightning's loops ask several times per training step; A2C has one per ~5 ms rollout)."""
        stage = self.state.stage
        return stage is RunningStage.TRAINING or stage == RunningStage.TRAINING

    @training.setter
    def training(self, val: bool) -> None:
        _LIGHTNING_TRAINING.__set__(self, val)

    # ------------------------------------------------------------------ budget

    @property
    def rl_total_timesteps(self) -> int:
        """Return the trainer-owned RL timestep budget."""
        return self._rl_total_timesteps

    @property
    def rl_num_timesteps(self) -> int:
        """Return the latest observed RL env-step count."""
        return int(getattr(self.lightning_module, "num_timesteps", 0))

    @property
    def rl_budget_reached(self) -> bool:
        """Return whether the trainer-owned RL timestep budget has been reached."""
        return self._rl_total_timesteps > 0 and self.rl_num_timesteps >= self._rl_total_timesteps

    @property
    def rl_progress(self) -> float:
        """Return RL budget progress as a value in [0, 1]."""
        if self._rl_total_timesteps <= 0:
            return 0.0
        return min(1.0, self.rl_num_timesteps / self._rl_total_timesteps)

    # ------------------------------------------------------------------ stages

    def _attach(self, model: Any, datamodule: Any, stage: str) -> RLEnvDataModule:
        """Check the arguments, resolve the stage's env (fails fast on bad envs) and attach the datamodule."""
        if not isinstance(model, L.LightningModule) or not isinstance(model, RLModule):
            raise TypeError(f"model: RLTrainer runs lit_sb3 algorithms (BaseAlgorithm), got {type(model).__name__}")
        if not isinstance(datamodule, RLEnvDataModule):
            raise TypeError(
                f"datamodule: RLTrainer.{stage} needs an RLEnvDataModule holding the envs, "
                f"got {type(datamodule).__name__}"
            )
        self.datamodule = datamodule  # Lightning drives its setup/teardown/state_dict through this attribute
        datamodule.trainer = self
        return datamodule

    def fit(  # type: ignore[override]  # the spec'd signature: an RL module in, the same module back for chaining
        self,
        model: RLModule,
        *,
        datamodule: Any = None,
        train_dataloaders: Any = None,
        val_dataloaders: Any = None,
        ckpt_path: str | Path | None = None,
        weights_only: bool | None = None,
    ) -> RLModule:
        """Train ``model`` for :attr:`rl_total_timesteps` environment steps.

        The environment is provided via an :class:`~lit_sb3.datamodule.RLEnvDataModule`.

        :param model: the RL algorithm (a LightningModule subclass)
        :param datamodule: an RLEnvDataModule with a training env (and optionally evaluation envs)
        :param train_dataloaders: unsupported for RLTrainer
        :param val_dataloaders: unsupported for RLTrainer
        :param ckpt_path: optional Lightning checkpoint path to resume from
        :param weights_only: optional Lightning checkpoint loading flag
        :return: the trained model (same object, for chaining)
        """
        if train_dataloaders is not None or val_dataloaders is not None:
            raise TypeError(
                "train_dataloaders/val_dataloaders: RLTrainer collects its own data; "
                "pass datamodule=RLEnvDataModule(train_env=...) instead"
            )
        if self._rl_total_timesteps <= 0:
            raise ValueError("max_steps: RLTrainer.fit needs an env-step budget, e.g. RLTrainer(max_steps=100_000)")
        self._check_processes(model)
        if datamodule is None and isinstance(model, OwnEnvs):
            datamodule = model.fit_datamodule()
        datamodule = self._attach(model, datamodule, "fit")
        env = datamodule.get_env("fit")
        if env is None:
            raise ValueError("datamodule: RLEnvDataModule has no train_env to fit on")
        model.check_env(env)
        model.prepare_run(self._rl_total_timesteps, self.rl_callback)
        if weights_only is None and is_trusted():  # LIT_SB3_TRUST=1 / lit_sb3.safe_load.trusted()
            weights_only = False
        try:
            # a checkpoint loads without unpickling foreign code unless the caller passes weights_only=False
            with (
                quiet_lightning(),
                trusted_checkpoint(
                    ckpt_path if ckpt_path not in (None, "last", "best") and weights_only is not False else None
                ),
            ):
                super().fit(
                    cast(L.LightningModule, model),  # _attach checked it is one
                    train_dataloaders=model.train_dataloader(),
                    ckpt_path=ckpt_path,
                    weights_only=True if weights_only is None else weights_only,
                )
        finally:
            datamodule.teardown("fit")
        return model

    def _check_processes(self, model: RLModule) -> None:
        """Multi-process training: on-policy algorithms whose update is one collective gradient step, under "ddp"."""
        if self.world_size == 1:
            return
        if not model.multi_process_update:
            raise ValueError(
                f"devices: multi-process training supports PPO, A2C, TRPO, MaskablePPO and RecurrentPPO, not "
                f"{type(model).__name__}; run one process per seed instead (e.g. the harness's launcher)"
            )
        if not isinstance(self.strategy, DDPStrategy) or spawns_processes(self.strategy):
            raise ValueError(
                f"strategy: multi-process RL training runs under strategy='ddp' (each process builds its own envs), "
                f"got {type(self.strategy).__name__} with {type(self.strategy.launcher).__name__}"
            )

    def _evaluate(self, run: Any, stage: str, model: Any, datamodule: Any, **kwargs: Any) -> Any:
        if datamodule is None and self.datamodule is not None:
            datamodule = self.datamodule
        datamodule = self._attach(model if model is not None else self.lightning_module, datamodule, stage)
        env = datamodule.get_env(stage)
        if env is None:
            raise ValueError(f"datamodule: RLEnvDataModule has no {stage} env (nor an env id to build one from)")
        request: tuple[Any, ...] = (datamodule.n_eval_episodes, datamodule.deterministic_eval)
        if stage == "predict":
            request += (kwargs.pop("trajectories"),)
        with quiet_lightning():
            return run(model, dataloaders=EvalEpisodes(request), **kwargs)

    def validate(
        self,
        model: Any = None,
        dataloaders: Any = None,
        ckpt_path: Any = None,
        verbose: bool = True,
        datamodule: Any = None,
        weights_only: bool | None = None,
    ) -> Any:
        """Run evaluation episodes on the datamodule's val env; logs ``eval/mean_reward`` and friends."""
        if dataloaders is not None:
            raise TypeError("dataloaders: RLTrainer evaluates on envs; pass datamodule=RLEnvDataModule(val_env=...)")
        return self._evaluate(
            super().validate,
            "validate",
            model,
            datamodule,
            ckpt_path=ckpt_path,
            verbose=verbose,
            weights_only=weights_only,
        )

    def test(
        self,
        model: Any = None,
        dataloaders: Any = None,
        ckpt_path: Any = None,
        verbose: bool = True,
        datamodule: Any = None,
        weights_only: bool | None = None,
    ) -> Any:
        """Run evaluation episodes on the datamodule's test env; logs ``eval/mean_reward`` and friends."""
        if dataloaders is not None:
            raise TypeError("dataloaders: RLTrainer evaluates on envs; pass datamodule=RLEnvDataModule(test_env=...)")
        return self._evaluate(
            super().test, "test", model, datamodule, ckpt_path=ckpt_path, verbose=verbose, weights_only=weights_only
        )

    def predict(
        self,
        model: Any = None,
        dataloaders: Any = None,
        datamodule: Any = None,
        return_predictions: bool | None = None,
        ckpt_path: Any = None,
        weights_only: bool | None = None,
        *,
        trajectories: bool = False,
    ) -> list[dict[str, Any]] | None:
        """Run ``n_eval_episodes`` episodes (``deterministic_eval`` actions) on the datamodule's predict env.

        :param trajectories: also return each episode's ``observations`` and ``actions`` (one row per step)
        :return: one dict per episode: ``return`` (float), ``length`` (int), and with ``trajectories`` the stacked
            ``observations`` (a dict of arrays for Dict spaces) and ``actions``; None when ``return_predictions``
            is False
        """
        if dataloaders is not None:
            raise TypeError("dataloaders: RLTrainer predicts on envs; pass datamodule=RLEnvDataModule(predict_env=...)")
        batches = self._evaluate(
            super().predict,
            "predict",
            model,
            datamodule,
            return_predictions=return_predictions,
            ckpt_path=ckpt_path,
            weights_only=weights_only,
            trajectories=trajectories,
        )
        return None if batches is None else [episode for batch in batches for episode in batch]
