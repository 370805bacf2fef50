"""What every algorithm keeps besides its parameters and optimizer states, in each of the two formats.

- ``"checkpoint"``: the training state an exact resume needs (spaces, counters, RNGs, the env's replay log, the
  episode statistics), stored under ``checkpoint["lit_sb3"]`` next to Lightning's ``state_dict`` and
  ``hyper_parameters``;
- ``"zip"``: SB3's ``data`` entries (the hyperparameters and the attributes SB3's own ``load`` sets): what SB3's
  ``save`` of the same algorithm writes, so that either library loads it.

``BaseAlgorithm`` writes these entries, reads them back and puts the training env where a checkpoint left it; the
algorithms and their parts add their own entries through its hook pair (``_extra_state`` / ``_load_extra_state``).
A resumed checkpoint's hyperparameters are compared with the model's (:func:`warn_about_changed_hyperparameters`).
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Literal

import lightning as L
import numpy as np

StateFormat = Literal["checkpoint", "zip"]
CHECKPOINT: StateFormat = "checkpoint"
ZIP: StateFormat = "zip"

#: ``data`` entry listing what ``save(include=...)`` added, so that ``load`` puts exactly those back
INCLUDED_KEY = "lit_sb3_included"
#: constructor arguments that are not hyperparameters (ignored by ``save_hyperparameters``)
NOT_HPARAMS = ("self", "env", "_init_setup_model", "tensorboard_log")


def unsaved_hyperparameters(model: L.LightningModule) -> dict[str, Any]:
    """Constructor arguments Lightning left out of ``hparams`` because they cannot be pickled (lambdas), with the
    model's value of each."""
    parameters = inspect.signature(type(model).__init__).parameters.values()
    return {
        p.name: getattr(model, p.name)
        for p in parameters
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        and p.name not in NOT_HPARAMS
        and p.name not in model.hparams
        and p.name != "device"
        and hasattr(model, p.name)
    }


# ---------------------------------------------------------------------- Lightning checkpoints

CKPT_KEY = "lit_sb3"
VOLATILE_HPARAMS = ("verbose", "device")  # where and how loudly a run trains, not what it trains
#: checkpoint entry naming the constructor arguments Lightning could not keep in ``hyper_parameters`` (lambdas)
UNSAVED_KEY = "unsaved_hyperparameters"


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


def warn_about_changed_hyperparameters(model: L.LightningModule, saved: dict[str, Any]) -> None:
    """Resuming a checkpoint into a model built with other hyperparameters trains with the model's: say which."""
    changed = [
        f"{key}={model.hparams[key]!r} (checkpoint: {saved[key]!r})"
        for key in saved
        if key in model.hparams and key not in VOLATILE_HPARAMS and not _same(model.hparams[key], saved[key])
    ]
    if changed:
        warnings.warn(
            f"ckpt_path: {type(model).__name__} differs from the checkpoint's hyperparameters: {'; '.join(changed)}; "
            f"training continues with the model's values (build the model with the checkpoint's to resume it exactly)",
            stacklevel=2,
        )
