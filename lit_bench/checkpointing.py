"""Periodic checkpoints on env-step boundaries, for both backends, each followed by ``checkpoints/state.json``.

Checkpoints are taken where the algorithm's state is consistent: after an update (lit: end of an on-policy
rollout+update epoch, or of an off-policy training step; SB3: at the start of the next rollout).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import lightning as L
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm as SB3OffPolicy
from stable_baselines3.common.vec_env import VecNormalize

from lit_bench.rundir import RunDir, atomic_write

LIT_CHECKPOINT = "last.ckpt"
SB3_CHECKPOINT = "last.zip"
SB3_REPLAY_BUFFER = "replay_buffer.pkl"


def save_vecnormalize(env: Any, run: RunDir) -> None:
    if isinstance(env, VecNormalize):
        atomic_write(run.vecnormalize, lambda tmp: env.save(str(tmp)))


class _Boundaries:
    """Tracks the next multiple of ``every`` env steps."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.next = every

    def start(self, timesteps: int) -> None:
        self.next = (timesteps // self.every + 1) * self.every

    def crossed(self, timesteps: int) -> bool:
        if timesteps < self.next:
            return False
        self.start(timesteps)
        return True


class LitCheckpoint(L.Callback):
    """Lightning callback: ``trainer.save_checkpoint`` to ``checkpoints/last.ckpt`` every ``every`` env steps."""

    def __init__(self, run: RunDir, every: int, wall_time: Callable[[], float]) -> None:
        self.run = run
        self.boundaries = _Boundaries(every)
        self.wall_time = wall_time
        self.saved_at = -1

    def on_train_start(self, trainer: L.Trainer, pl_module: Any) -> None:
        self.boundaries.start(pl_module.num_timesteps)
        self.saved_at = pl_module.num_timesteps

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        if self.boundaries.crossed(pl_module.num_timesteps):
            self.save(trainer, pl_module)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        from lit_sb3.common.off_policy import OffPolicyAlgorithm

        # An off-policy epoch never ends; an on-policy batch is a minibatch in the middle of an update.
        if isinstance(pl_module, OffPolicyAlgorithm) and self.boundaries.crossed(pl_module.num_timesteps):
            self.save(trainer, pl_module)

    def on_train_end(self, trainer: L.Trainer, pl_module: Any) -> None:
        self.save(trainer, pl_module)  # the final model, as SB3Checkpoint keeps it (what enjoy --checkpoint last loads)

    def save(self, trainer: L.Trainer, pl_module: Any) -> None:
        if pl_module.num_timesteps == self.saved_at:
            return
        path = self.run.checkpoints / LIT_CHECKPOINT
        atomic_write(path, lambda tmp: trainer.save_checkpoint(str(tmp), weights_only=False))
        save_vecnormalize(pl_module.get_env(), self.run)
        self.run.mark_checkpoint(pl_module.num_timesteps, self.wall_time())
        self.saved_at = pl_module.num_timesteps


class SB3Checkpoint(BaseCallback):
    """SB3 callback: ``model.save`` (+ replay buffer) to ``checkpoints/`` every ``every`` env steps."""

    def __init__(self, run: RunDir, every: int, wall_time: Callable[[], float], replay_buffer: bool) -> None:
        super().__init__(verbose=0)
        self.run = run
        self.boundaries = _Boundaries(every)
        self.wall_time = wall_time
        self.replay_buffer = replay_buffer
        self.saved_at = -1

    def _init_callback(self) -> None:
        self.boundaries.start(self.model.num_timesteps)
        self.saved_at = self.model.num_timesteps

    def _on_step(self) -> bool:
        return True

    def _on_rollout_start(self) -> None:
        # the previous rollout's update is done: parameters and num_timesteps agree
        if self.boundaries.crossed(self.model.num_timesteps):
            self.save()

    def _on_training_end(self) -> None:
        self.save()

    def save(self) -> None:
        model = self.model
        if model.num_timesteps == self.saved_at:
            return
        atomic_write(self.run.checkpoints / SB3_CHECKPOINT, lambda tmp: model.save(str(tmp)))
        if self.replay_buffer and isinstance(model, SB3OffPolicy):
            tmp_buffer = self.run.checkpoints / f".{SB3_REPLAY_BUFFER}.{os.getpid()}.tmp.pkl"
            model.save_replay_buffer(str(tmp_buffer))
            os.replace(tmp_buffer, self.run.checkpoints / SB3_REPLAY_BUFFER)
        save_vecnormalize(model.get_env(), self.run)
        self.run.mark_checkpoint(model.num_timesteps, self.wall_time())
        self.saved_at = model.num_timesteps
