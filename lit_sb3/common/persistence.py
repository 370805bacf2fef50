"""Saving and loading an algorithm: the :class:`Persistence` mixin of :class:`~lit_sb3.common.base.BaseAlgorithm`.

Both formats, SB3-style zips (``save`` / ``load``, :mod:`lit_sb3.common.zips`) and Lightning checkpoints, keep the
modules' parameters and optimizer states; what an algorithm keeps besides them goes through ONE hook pair,
:meth:`Persistence._extra_state` / :meth:`Persistence._load_extra_state`, asked for a format
(:mod:`lit_sb3.common.saved_state` says what each format holds; the algorithm's parts, :mod:`lit_sb3.common.parts`,
add theirs through the same pair). This module holds that pair, Lightning's checkpoint hooks and SB3's parameter
groups (``get_parameters`` / ``set_parameters``).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import torch
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common import zips
from lit_sb3.common.envs import space_from_dict
from lit_sb3.common.safe_load import CheckpointError, is_trusted, trusted_checkpoint
from lit_sb3.common.saved_state import (
    CHECKPOINT,
    ZIP,
    StateFormat,
    base_state,
    load_base_state,
    resume_env_state,
    unsaved_hyperparameters,
)
from lit_sb3.lightning_compat import attached_trainer

if TYPE_CHECKING:
    import lightning as L

    from lit_sb3.common.base import BaseAlgorithm

    _Base = L.LightningModule  # the class after the mixins in BaseAlgorithm's bases (its hooks are overridden here)
else:
    _Base = object

__all__ = ["CHECKPOINT", "ZIP", "Persistence", "StateFormat"]

SelfPersistence = TypeVar("SelfPersistence", bound="Persistence")

_CKPT_KEY = "lit_sb3"
_VOLATILE_HPARAMS = ("verbose", "device")  # where and how loudly a run trains, not what it trains
#: checkpoint entry naming the constructor arguments Lightning could not keep in ``hyper_parameters`` (lambdas)
_UNSAVED_KEY = "unsaved_hyperparameters"


def _algorithm(mixin: Persistence) -> BaseAlgorithm:
    """``mixin`` as the algorithm it is part of: Persistence is a base of :class:`BaseAlgorithm` only."""
    return cast("BaseAlgorithm", mixin)


class Persistence(_Base):
    """``save`` / ``load`` / ``get_parameters`` / ``set_parameters`` and the checkpoint hooks of :class:`BaseAlgorithm`
    (a mixin placed before ``LightningModule``, whose checkpoint hooks it overrides)."""

    # ------------------------------------------------------------------ the one hook pair

    def _extra_state(self, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        """What this algorithm keeps besides its parameters and optimizer states, in format ``fmt`` (see the module
        docstring); subclasses extend the dict (and check ``fmt`` when an entry belongs to one format only)."""
        algorithm = _algorithm(self)
        state = base_state(algorithm, fmt)
        for part in algorithm._parts:
            state.update(part.state(fmt))
        return state

    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        """Restore what :meth:`_extra_state` returned (the networks are built already); a checkpoint's env state
        waits for the training env (:meth:`_resume_training_state` at train start)."""
        algorithm = _algorithm(self)
        for part in algorithm._parts:
            part.load_state(state, fmt)
        load_base_state(algorithm, state, fmt)

    def _resume_training_state(self, env: VecEnv, state: dict[str, Any]) -> None:
        """Put ``env`` and the collection state where the checkpoint left them (subclasses extend)."""
        resume_env_state(_algorithm(self), env, state)

    # ------------------------------------------------------------------ Lightning checkpoints

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        algorithm = _algorithm(self)
        if algorithm.observation_space is not None:
            checkpoint[_CKPT_KEY] = self._extra_state(CHECKPOINT)
            checkpoint[_CKPT_KEY][_UNSAVED_KEY] = sorted(unsaved_hyperparameters(algorithm))

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        algorithm = _algorithm(self)
        if attached_trainer(self) is not None:  # resuming into a model the caller built (load_from_checkpoint: its own)
            _warn_about_changed_hyperparameters(algorithm, checkpoint.get("hyper_parameters") or {})
        state = checkpoint.get(_CKPT_KEY)
        if state is None:
            return
        algorithm.build(space_from_dict(state["observation_space"]), space_from_dict(state["action_space"]))
        self._load_extra_state(state, CHECKPOINT)
        self._unsaved_in_checkpoint = list(state.get(_UNSAVED_KEY) or [])

    @classmethod
    def load_from_checkpoint(
        cls,
        checkpoint_path: str | Path | Any,
        map_location: Any = None,
        hparams_file: str | Path | None = None,
        strict: bool | None = None,
        weights_only: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """Lightning's ``load_from_checkpoint``, safe by default: ``weights_only=True`` with the objects lit_sb3
        checkpoints hold allow-listed (action noise, schedules, policy/buffer classes); one clear line for a
        missing, truncated or foreign file. ``weights_only=False`` unpickles anything (trusted files only)."""
        if weights_only is None and is_trusted():  # LIT_SB3_TRUST=1 / lit_sb3.safe_load.trusted()
            weights_only = False
        local = isinstance(checkpoint_path, (str, Path)) and "://" not in str(checkpoint_path)
        with trusted_checkpoint(checkpoint_path if local and weights_only is not False else None):
            model = super().load_from_checkpoint(
                checkpoint_path,
                map_location=map_location,
                hparams_file=hparams_file,
                strict=strict,
                weights_only=True if weights_only is None else weights_only,
                **kwargs,
            )
        missing = [name for name in getattr(model, "_unsaved_in_checkpoint", []) if name not in kwargs]
        if missing:  # the model was built with the defaults instead: never hand it back as the saved one
            raise CheckpointError(
                f"load_from_checkpoint: the checkpoint has no {', '.join(missing)} (code, e.g. a lambda, which "
                f"Lightning does not keep in a checkpoint); give it again: load_from_checkpoint(path, "
                f"{', '.join(f'{name}=...' for name in missing)})"
            )
        return model

    # ------------------------------------------------------------------ SB3 parameters and zips

    def get_parameters(self) -> dict[str, dict[str, Any]]:
        """``{"policy": state_dict, "policy.optimizer": state_dict, ...}`` as SB3 returns it."""
        algorithm = _algorithm(self)
        if algorithm.policy is None:
            raise RuntimeError("get_parameters: the networks are not built yet")
        params = {"policy": algorithm.policy.state_dict()}
        for name, optimizer in algorithm._named_optimizers().items():
            params[name] = optimizer.state_dict()
        return params

    def set_parameters(
        self,
        load_path_or_dict: str | dict[str, dict[str, Any]],
        exact_match: bool = True,
        device: torch.device | str = "auto",
    ) -> None:
        """Load parameters from a ``save`` zip or a ``get_parameters`` dict."""
        if isinstance(load_path_or_dict, dict):
            params = load_path_or_dict
        else:
            params = zips.read_parameters(load_path_or_dict, device)
        algorithm = _algorithm(self)
        targets: dict[str, Any] = {"policy": algorithm.policy, **algorithm._named_optimizers()}
        missing = set(targets) - set(params)
        if exact_match and missing:
            raise ValueError(f"set_parameters: missing {sorted(missing)} in the loaded parameters")
        for name, state in params.items():
            if name not in targets:
                raise ValueError(f"set_parameters: unknown parameter group {name!r}; expected {sorted(targets)}")
            if isinstance(targets[name], torch.optim.Optimizer):
                targets[name].load_state_dict(state)
            else:
                targets[name].load_state_dict(state, strict=exact_match)

    def save(self, path: str | Path, exclude: list[str] | None = None, include: list[str] | None = None) -> None:
        """SB3-style zip: hyperparameters, spaces and counters (``data``) plus parameters (``params``).

        :param exclude: ``data`` entries to leave out (except those also in ``include``, as in SB3)
        :param include: attributes ``save`` leaves out by default to keep as well (e.g. ``["_last_obs",
            "_last_episode_starts"]``, which ``load(env=..., force_reset=False)`` continues from); ``load`` puts
            them back
        """
        zips.save_zip(_algorithm(self), path, exclude, include)

    @classmethod
    def load(
        cls: type[SelfPersistence],
        path: str | Path,
        env: GymEnv | str | None = None,
        device: torch.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        *,
        trusted: bool | None = None,
        **kwargs: Any,
    ) -> SelfPersistence:
        """Load a zip written by ``save`` (or by SB3's own ``save`` of the same algorithm).

        Safe by default: values come from ``custom_objects``, the plain-JSON mirror ``save`` writes, or the zip's
        ``:serialized:`` (cloudpickle) entries read through lit_sb3's allow-list (:mod:`lit_sb3.safe_load`: how an
        SB3-written zip loads); a needed value naming anything else is refused in one line. ``trusted=True`` (or,
        when ``trusted`` is not given, ``LIT_SB3_TRUST=1`` / ``lit_sb3.safe_load.trusted()``) unpickles everything.

        :param force_reset: as in SB3: reset ``env`` before training. ``False`` continues ``env`` from the
            observation the zip holds (SB3's zips, or ``save(include=["_last_obs", "_last_episode_starts"])``)
            when the next ``learn`` keeps counting (``reset_num_timesteps=False``)
        """
        return zips.load_zip(cls, path, env, device, custom_objects, print_system_info, force_reset, trusted, kwargs)


def _same(a: Any, b: Any) -> bool:
    """Equal values, comparing objects without ``__eq__`` (action noise, schedules) by their attributes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is type(b) and hasattr(a, "__dict__") and not isinstance(a, type) and not _defines(type(a), "__eq__"):
        if _defines(type(a), "__repr__"):  # action noise: its repr names the settings, not the noise state
            return repr(a) == repr(b)
        return _same(vars(a), vars(b))
    return bool(a == b)


def _defines(cls: type, name: str) -> bool:
    """Whether ``cls`` overrides ``object``'s method ``name`` (itself or through a base)."""
    return getattr(cls, name) is not getattr(object, name)


def _warn_about_changed_hyperparameters(model: BaseAlgorithm, saved: dict[str, Any]) -> None:
    """Resuming a checkpoint into a model built with other hyperparameters trains with the model's: say which."""
    changed = [
        f"{key}={model.hparams[key]!r} (checkpoint: {saved[key]!r})"
        for key in saved
        if key in model.hparams and key not in _VOLATILE_HPARAMS and not _same(model.hparams[key], saved[key])
    ]
    if changed:
        warnings.warn(
            f"ckpt_path: {type(model).__name__} differs from the checkpoint's hyperparameters: {'; '.join(changed)}; "
            f"training continues with the model's values (build the model with the checkpoint's to resume it exactly)",
            stacklevel=2,
        )
