"""The best-model checkpoint: after each evaluation that beats every earlier one, keep the model (as SB3's
``EvalCallback`` keeps ``best_model.zip``), with the VecNormalize statistics it was evaluated with.

Files in ``checkpoints/``: ``best.ckpt`` (lit: weights and hyperparameters, no optimizer or replay buffer) or
``best.zip`` (sb3), ``best_vecnormalize.pkl`` when the env is normalized, then ``best.json`` (timesteps,
mean_return) last: each is written to a temporary file and moved into place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_bench.store.format import BEST_FILES, BEST_STATE, BEST_VECNORMALIZE, LAST_FILES
from lit_bench.store.rundir import RunDir, atomic_write, atomic_write_json

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm as SB3Algorithm

    from lit_sb3.common.base import BaseAlgorithm


def best_state(run: RunDir) -> dict[str, Any] | None:
    """``{"timesteps", "mean_return"}`` of the kept best model, or None when there is none yet."""
    try:
        return json.loads((run.checkpoints / BEST_STATE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def checkpoint_files(run: RunDir, backend: str, which: str) -> tuple[Path, Path]:
    """(model file, VecNormalize statistics file) of the ``last`` or ``best`` checkpoint of a run."""
    names = BEST_FILES if which == "best" else LAST_FILES
    vecnormalize = run.checkpoints / BEST_VECNORMALIZE if which == "best" else run.vecnormalize
    return run.checkpoints / names[backend], vecnormalize


class BestCheckpoint:
    """``PeriodicEval`` hook: save the model when an evaluation's mean return beats the best so far, with the
    VecNormalize statistics of ``eval_env`` (those the evaluation used).

    The best score so far is read back from ``best.json``, so a resumed run keeps its earlier best. ``model_of``: a
    seed of a batched group, whose ordinary model (``SeedGroup.model``) is made only when it is kept.
    """

    def __init__(
        self, run: RunDir, backend: str, eval_env: VecEnv, model_of: Callable[[], BaseAlgorithm] | None = None
    ) -> None:
        self.run = run
        self.backend = backend
        self.eval_env = eval_env
        self.model_of = model_of
        state = best_state(run)
        self.best = float(state["mean_return"]) if state else -math.inf

    def __call__(self, model: BaseAlgorithm | SB3Algorithm | None, row: dict[str, Any]) -> None:
        if float(row["mean_return"]) <= self.best:
            return
        self.best = float(row["mean_return"])
        if self.model_of is not None:
            model = self.model_of()
        assert model is not None
        model_path, vecnormalize_path = checkpoint_files(self.run, self.backend, "best")
        env = self.eval_env
        if isinstance(env, VecNormalize):
            atomic_write(vecnormalize_path, lambda tmp: env.save(str(tmp)))
        atomic_write(model_path, lambda tmp: self._save_model(model, tmp))
        atomic_write_json(
            self.run.checkpoints / BEST_STATE, {"timesteps": int(row["timesteps"]), "mean_return": self.best}
        )

    def _save_model(self, model: BaseAlgorithm | SB3Algorithm, path: Path) -> None:
        if self.backend == "sb3":
            model.save(str(path))  # SB3 leaves the replay buffer out of its zips
            return
        import lightning
        import torch

        from lit_sb3.common.off_policy import OffPolicyAlgorithm
        from lit_sb3.lightning_compat import attached_trainer, checkpoint_contents

        lit_model = cast("BaseAlgorithm", model)  # the lit backend's
        buffered = model if isinstance(model, OffPolicyAlgorithm) and model.checkpoint_replay_buffer else None
        if buffered is not None:
            buffered.checkpoint_replay_buffer = False  # a model to watch, not to resume from: no replay buffer
        try:
            trainer = attached_trainer(lit_model)
            if trainer is None:  # a seed of a batched group (its ordinary model): what the Trainer writes of it
                checkpoint = {
                    "state_dict": lit_model.state_dict(),
                    "hyper_parameters": dict(lit_model.hparams),
                    "pytorch-lightning_version": lightning.__version__,
                }
                lit_model.on_save_checkpoint(checkpoint)
                torch.save(checkpoint, path)
                return
            # trainer.save_checkpoint without its barrier: only rank 0 evaluates in a multi-process run
            trainer.strategy.checkpoint_io.save_checkpoint(checkpoint_contents(trainer, weights_only=True), str(path))
        finally:
            if buffered is not None:
                buffered.checkpoint_replay_buffer = True
