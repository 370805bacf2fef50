"""Periodic checkpoints on env-step boundaries, for both backends, each followed by ``checkpoints/state.json``.

Checkpoints are taken where the algorithm's state is consistent: after an update (lit: end of an on-policy
rollout+update epoch, or of an off-policy training step; SB3: at the start of the next rollout).

A new checkpoint is written to a temporary file, checked (zip CRCs), and only then moved over ``last.*``; the
one it replaces is kept as ``previous.*``. On resume, :func:`resume_point` uses ``last.*`` when it reads back,
else ``previous.*``, else starts the run afresh, saying so in one line. Nothing in a checkpoint is unpickled:
the lit backend's ``.ckpt`` loads with ``weights_only=True`` (see ``lit_sb3.common.safe_load``); the sb3
backend's resume reads only the tensors and plain JSON values of its zip, and its replay buffer and
VecNormalize statistics are written as tensors (``.pt``, loaded ``weights_only``).

The best-model checkpoint (:class:`BestCheckpoint`) is kept beside them: after each evaluation that beats every
earlier one, the model (as SB3's ``EvalCallback`` keeps ``best_model.zip``) with the VecNormalize statistics it was
evaluated with: ``best.ckpt`` (lit: weights and hyperparameters, no optimizer or replay buffer) or ``best.zip``
(sb3), ``best_vecnormalize.pkl`` when the env is normalized, then ``best.json`` (timesteps, mean_return) last.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import lightning as L
import torch
from stable_baselines3.common.base_class import BaseAlgorithm as SB3Algorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm as SB3OffPolicy
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_bench.config.budget import next_boundary
from lit_bench.store.format import (
    BATCHED_CHECKPOINT,
    BEST_FILES,
    BEST_STATE,
    BEST_VECNORMALIZE,
    LAST_FILES,
    SB3_REPLAY_BUFFER,
    SB3_VECNORMALIZE,
)
from lit_bench.store.rundir import RunDir, atomic_write, atomic_write_json, fresh_tmp

if TYPE_CHECKING:
    from lit_sb3.common.base import BaseAlgorithm

CHECKPOINT_FILES = LAST_FILES
LIT_CHECKPOINT, SB3_CHECKPOINT = LAST_FILES["lit"], LAST_FILES["sb3"]


def previous_name(name: str) -> str:
    return name.replace("last", "previous", 1)


def save_vecnormalize(env: Any, run: RunDir) -> None:
    """``vecnormalize.pkl`` in SB3's own format, for users who evaluate the trained model later (never read back)."""
    if isinstance(env, VecNormalize):
        atomic_write(run.vecnormalize, lambda tmp: env.save(str(tmp)))


# ---------------------------------------------------------------------------------------------- writing


def zip_problem(path: Path) -> str | None:
    """None when ``path`` is a complete zip archive (torch checkpoints and SB3 zips are), else what is wrong."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return f"corrupt member {bad}" if bad is not None else None


def install_checkpoint(
    run: RunDir, name: str, write: Callable[[Path], None], timesteps: int, wall_time_s: float
) -> None:
    """Write ``checkpoints/<name>`` through ``write(tmp)``: check it, keep the current one as ``previous``, move it
    into place, then record ``state.json``. A file that does not check out is dropped with one warning line (the
    run goes on; the last good checkpoint stays)."""
    final = run.checkpoints / name
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = fresh_tmp(final)
    try:
        write(tmp)
        problem = zip_problem(tmp)
        if problem is not None:
            warn(f"checkpoint at {timesteps} env steps not kept: the written file does not read back ({problem})")
            return
        if final.exists():
            os.replace(final, final.with_name(previous_name(name)))
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    atomic_write_json(run.checkpoint_state, {"timesteps": int(timesteps), "wall_time_s": round(wall_time_s, 3)})


def save_lit_checkpoint(trainer: L.Trainer, module: Any, run: RunDir, wall_time_s: float) -> None:
    """The lit backend's checkpoint of ``module`` at its current env step (also what a signal handler calls)."""
    if not trainer.is_global_zero:  # a further rank of a multi-process run: joins the collective save, writes nothing
        trainer.save_checkpoint(os.devnull, weights_only=False)
        return
    # weights_only=False saves the full training state (optimizers, loops), not "load with weights_only"
    install_checkpoint(
        run,
        LIT_CHECKPOINT,
        lambda tmp: trainer.save_checkpoint(str(tmp), weights_only=False),
        module.num_timesteps,
        wall_time_s,
    )
    save_vecnormalize(module.get_env(), run)


def save_sb3_checkpoint(model: SB3Algorithm, run: RunDir, wall_time_s: float, replay_buffer: bool) -> None:
    """The sb3 backend's checkpoint: SB3's zip, plus the replay buffer and VecNormalize statistics as tensors."""
    from lit_sb3.common.replay import buffer_arrays
    from lit_sb3.common.resume import vecnormalize_state

    extras = {SB3_VECNORMALIZE: vecnormalize_state(model.get_env())}
    if replay_buffer and isinstance(model, SB3OffPolicy) and model.replay_buffer is not None:
        extras[SB3_REPLAY_BUFFER] = buffer_arrays(model.replay_buffer)
    for name, state in extras.items():  # written first: the zip and state.json mark the checkpoint complete
        if state is not None:
            atomic_write(run.checkpoints / name, functools.partial(torch.save, state))
    install_checkpoint(run, SB3_CHECKPOINT, lambda tmp: model.save(str(tmp)), model.num_timesteps, wall_time_s)
    save_vecnormalize(model.get_env(), run)


def save_checkpoint(
    backend: str,
    model: BaseAlgorithm | SB3Algorithm,
    run: RunDir,
    wall_time_s: float,
    *,
    trainer: L.Trainer | None = None,
    replay_buffer: bool = True,
) -> None:
    """Checkpoint a running job now, for either backend (``trainer`` is the lit backend's RLTrainer)."""
    if backend == "lit":
        assert trainer is not None, "save_checkpoint: the lit backend needs its trainer"
        save_lit_checkpoint(trainer, model, run, wall_time_s)
    else:
        save_sb3_checkpoint(cast(SB3Algorithm, model), run, wall_time_s, replay_buffer)  # the sb3 backend's


# ---------------------------------------------------------------------------------------------- reading


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def checkpoint_timesteps(path: Path) -> int:
    """Env steps of a checkpoint, read from the file itself without unpickling anything (raises when unreadable)."""
    problem = zip_problem(path)
    if problem is not None:
        raise ValueError(problem)
    if path.suffix == ".zip":  # SB3's zip: "data" is JSON; num_timesteps is a plain number in it
        with zipfile.ZipFile(path) as archive:
            return int(json.loads(archive.read("data"))["num_timesteps"])
    if path.name in (BATCHED_CHECKPOINT, previous_name(BATCHED_CHECKPOINT)):  # tensors and plain data only
        return int(torch.load(path, map_location="cpu", weights_only=True)["seed_state"]["num_timesteps"])
    from lit_sb3.common.allow_list import is_trusted
    from lit_sb3.common.safe_load import trusted_checkpoint

    trust = is_trusted()  # LIT_SB3_TRUST=1: the user trusts every file read back
    with trusted_checkpoint(None if trust else path):
        checkpoint = torch.load(path, map_location="cpu", weights_only=not trust)
    return int(checkpoint["lit_sb3"]["num_timesteps"])


def resume_point(run: RunDir, backend: str, batched: bool = False) -> int | None:
    """The env step to resume from, or None to start afresh. Falls back from a damaged or missing ``last`` to
    ``previous`` (promoted to ``last``); one warning line for each fallback. ``batched``: a seed of a batched group
    (its own checkpoint file)."""
    name = BATCHED_CHECKPOINT if batched else CHECKPOINT_FILES[backend]
    last, previous = run.checkpoints / name, run.checkpoints / previous_name(name)
    problems = []
    for path in (last, previous):
        if not path.exists():
            if path is last and run.checkpoint_state.is_file():
                problems.append(f"{path.name} is missing")
            continue
        try:
            timesteps = checkpoint_timesteps(path)
        except Exception as error:  # any unreadable file: fall back, never wedge the run
            problems.append(f"{path.name} is unreadable ({str(error).splitlines()[0] if str(error) else error!r})")
            continue
        if path is previous:
            warn(f"{run.root}: {'; '.join(problems)}; resuming from {previous.name} at {timesteps} env steps")
            os.replace(previous, last)
        return timesteps
    if problems:
        warn(f"{run.root}: {'; '.join(problems)} and no earlier checkpoint reads back; starting the run afresh")
    return None


# ---------------------------------------------------------------------------------------------- callbacks


class _Boundaries:
    """Tracks the next multiple of ``every`` env steps."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.next = every

    def start(self, timesteps: int) -> None:
        self.next = next_boundary(timesteps, self.every)

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
        save_lit_checkpoint(trainer, pl_module, self.run, self.wall_time())
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
        if self.model.num_timesteps == self.saved_at:
            return
        save_sb3_checkpoint(self.model, self.run, self.wall_time(), self.replay_buffer)
        self.saved_at = self.model.num_timesteps


# ---------------------------------------------------------------------------------------------- the best model


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


def other_kind_of_checkpoint(run_dir: RunDir, batched: bool) -> str | None:
    """The line refusing a checkpoint of the other kind (None: none there): a batched seed's checkpoint never
    resumes ungrouped, an ungrouped run's never resumes in a group (their files differ), and a batched seed's
    checkpoint of an earlier lit_sb3 (``lit_sb3.seeds.group.seed_state_refusal``: its groups' other random streams)
    resumes nowhere."""
    theirs = [LAST_FILES["lit"], LAST_FILES["sb3"]] if batched else [BATCHED_CHECKPOINT]
    found = [name for name in theirs if (run_dir.checkpoints / name).exists()]
    if not found:
        return _earlier_streams(run_dir) if batched else None
    kind = "an ungrouped run" if batched else "a seed trained in a batched group"
    way = "in its own process (seeds_per_process=1)" if batched else "in a batched group (seeds_per_process)"
    return (
        f"{run_dir.root}: holds the checkpoint of {kind} (checkpoints/{found[0]}), which resumes only {way}; "
        f"nothing was changed: move it, or force=true to train it again"
    )


def _earlier_streams(run_dir: RunDir) -> str | None:
    """The line refusing a batched seed's checkpoint an earlier lit_sb3 wrote (None: none, or this one's)."""
    from lit_sb3.seeds.group import seed_state_refusal

    path = run_dir.checkpoints / BATCHED_CHECKPOINT
    if not path.exists():
        return None
    why = seed_state_refusal(torch.load(path, weights_only=True, mmap=True)["seed_state"])
    if why is None:
        return None
    return (
        f"{run_dir.root}: checkpoints/{BATCHED_CHECKPOINT} {why}; nothing was changed: move it, or force=true to "
        "train it again"
    )
