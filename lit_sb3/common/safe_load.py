"""Loading checkpoints without running foreign code: ``torch.load(weights_only=True)`` plus an allow-list.

A lit_sb3 checkpoint holds tensors and plain data, and in its hyperparameters a few objects and classes: action
noise, schedules, policy / buffer / activation / optimizer classes, numpy arrays inside them. The weights-only
unpickler refuses every global it was not told about; :func:`trusted_checkpoint` lists the globals a file references
and allows exactly those, provided each is one of the data classes or numpy pieces below. A file referencing
anything else (``os.system``, a user's class, ...) is refused with one line naming it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

# Classes a checkpoint may reference (and construct): plain data holders and configuration classes.
TRUSTED_CLASSES = (
    "stable_baselines3.common.noise.*",  # action noise
    "stable_baselines3.common.utils.*Schedule",  # learning-rate / exploration schedules
    "stable_baselines3.common.buffers.*",
    "stable_baselines3.her.*",
    "stable_baselines3.common.policies.*",
    "stable_baselines3.common.torch_layers.*",
    "stable_baselines3.*.policies.*",
    "sb3_contrib.*.policies.*",
    "lit_sb3.*",
    "torch.nn.modules.activation.*",
    "torch.optim.*",
)
# What numpy arrays and scalars inside those objects are pickled with.
TRUSTED_NUMPY = ("numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct", "numpy.ndarray",
                 "numpy.dtype", "numpy.dtypes.*", "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
                 "numpy.float16", "numpy.float32", "numpy.float64", "numpy.int8", "numpy.int16", "numpy.int32",
                 "numpy.int64", "numpy.uint8", "numpy.bool_", "numpy.bool")


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or that references code lit_sb3 does not load without the caller's say."""


def trusted_name(name: str) -> bool:
    """Whether ``module.qualname`` is on the allow-list (checked before anything is imported)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in (*TRUSTED_NUMPY, *TRUSTED_CLASSES))


def resolve_trusted(name: str) -> Any:
    """The allow-listed class (or numpy helper) ``module.qualname``; None when it is not allowed or not found."""
    if not trusted_name(name):
        return None
    module, _, attr = name.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None
    numpy_helper = any(fnmatch.fnmatchcase(name, pattern) for pattern in TRUSTED_NUMPY)
    return obj if numpy_helper or isinstance(obj, type) else None


def checkpoint_globals(path: str | Path) -> list[Any]:
    """The globals ``path`` references, resolved; raises :class:`CheckpointError` (one line) when it is missing,
    unreadable (truncated, not a torch file) or references anything outside the allow-list."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint: no such file: {path}")
    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception as error:  # torch raises RuntimeError/OSError/pickle errors for damaged files
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"checkpoint: {path} is not a readable checkpoint (truncated or not written by "
                              f"torch.save): {reason}") from None
    allowed, refused = [], []
    for name in names:
        obj = resolve_trusted(name)
        if obj is None:
            refused.append(name)
        else:
            allowed.append(obj)
    if refused:
        raise CheckpointError(
            f"checkpoint: {path} references {', '.join(map(str, refused))}, which lit_sb3 does not load by default "
            f"(code could run); if you trust the file, load it with torch.serialization.safe_globals([...]) "
            f"or weights_only=False"
        )
    if allowed:  # numpy dtype classes are built while unpickling arrays without being named as globals
        import numpy as np

        allowed += [cls for cls in vars(np.dtypes).values() if isinstance(cls, type) and issubclass(cls, np.dtype)]
    return allowed


@contextlib.contextmanager
def trusted_checkpoint(path: str | Path | None) -> Iterator[None]:
    """Inside the block, ``torch.load(path, weights_only=True)`` accepts the allow-listed globals ``path`` uses."""
    if path is None:
        yield
        return
    with torch.serialization.safe_globals(checkpoint_globals(path)):
        yield
