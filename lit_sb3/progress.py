"""A Lightning progress bar that counts env steps against the RL budget."""

from __future__ import annotations

from typing import Any

import lightning as L
from lightning.pytorch.callbacks.progress.progress_bar import ProgressBar
from tqdm.auto import tqdm


class EnvStepProgressBar(ProgressBar):
    """Shows ``num_timesteps / budget`` (env steps), env steps per second, the latest mean episode return and the
    latest evaluation's mean return (``eval/mean_reward``, from the ``rl_callback``'s or an ``EvalCallback``'s log)."""

    def __init__(self, refresh_seconds: float = 0.5) -> None:
        super().__init__()
        self.refresh_seconds = refresh_seconds
        self._enabled = True
        self._bar: tqdm | None = None

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    def print(self, *args: Any, **kwargs: Any) -> None:
        if self._bar is not None:
            self._bar.write(" ".join(str(a) for a in args))
        else:
            print(*args, **kwargs)

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not self._enabled:
            return
        total = getattr(trainer, "rl_total_timesteps", None) or None
        self._bar = tqdm(
            total=total,
            initial=pl_module.num_timesteps,
            desc=type(pl_module).__name__,
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
            mininterval=self.refresh_seconds,
        )

    def _refresh(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._bar is None:
            return
        delta = pl_module.num_timesteps - self._bar.n
        if delta > 0:
            shown = {"ep_rew_mean": "rollout/ep_rew_mean", "eval": "eval/mean_reward"}
            postfix = {
                name: f"{float(trainer.callback_metrics[key]):.1f}"
                for name, key in shown.items()
                if key in trainer.callback_metrics
            }
            if postfix:
                self._bar.set_postfix(postfix, refresh=False)
            self._bar.update(delta)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any) -> None:
        self._refresh(trainer, pl_module)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._refresh(trainer, pl_module)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._refresh(trainer, pl_module)
        if self._bar is not None:
            self._bar.close()
            self._bar = None
