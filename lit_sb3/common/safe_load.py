"""Reading back without running foreign code: the unpicklers and checkpoint readers that apply the allow-list.

Everything lit_sb3 and lit_bench read back -- Lightning checkpoints, ``save`` zips (their JSON mirror and their
pickled ``:serialized:`` entries), VecNormalize statistics, a run directory's ``config.yaml`` -- may name only data
and the entries of ONE allow-list (:mod:`lit_sb3.common.allow_list`, extended with ``lit_sb3.safe_load.allow``). A
pickle is read with :func:`loads`, a torch checkpoint inside :func:`trusted_checkpoint`; whatever names anything
else is refused in one line (:func:`refusal`) that says which setting lets it load.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from lit_sb3.common.allow_list import Refused, allowed_name

__all__ = [
    "ALLOW_HINT",
    "TRUST_HINT",
    "AllowListUnpickler",
    "CheckpointError",
    "NotAllowed",
    "checkpoint_globals",
    "loads",
    "refusal",
    "trusted_checkpoint",
    "weights_only_refusal",
    "zip_tensor_refusal",
]

#: how a refusal tells the user to go on (every refusal names these)
ALLOW_HINT = "lit_sb3.safe_load.allow({entry}) registers it once per process"
TRUST_HINT = "trust the file: {trusted}, LIT_SB3_TRUST=1, or `with lit_sb3.safe_load.trusted():`"


class CheckpointError(Refused):
    """A checkpoint that cannot be read, or that references code lit_sb3 does not load without the caller's say."""


def _as_entry(name: str) -> str:
    return name if ":" in name else ":".join(name.rpartition(".")[::2])


#: modules whose globals in a file are code (a lambda stored by value, a shell, an import): never worth an allow() hint
_CODE_MODULES = (
    "cloudpickle",
    "dill",
    "builtins",
    "copyreg",
    "types",
    "marshal",
    "os:",
    "posix:",
    "nt:",
    "sys:",
    "subprocess:",
    "importlib",
    "pathlib:",
    "shutil:",
    "io:",
    "runpy:",
    "pickle:",
    "_pickle:",
)


def _is_code(name: str) -> bool:
    return _as_entry(name).startswith(_CODE_MODULES)


def refusal(found: list[tuple[str, str]], trusted: str = "load(..., trusted=True)", prefix: str = "") -> Refused:
    """The one-line refusal of ``found``: (what holds it, the name it gives), e.g. ("load: a.zip: learning_rate",
    "rl_zoo3.utils:SimpleLinearSchedule"); it names the names and the settings that let them load."""
    said = "; ".join(
        f"{what} holds code ({name})" if _is_code(name) else f"{what} names {name}" for what, name in found
    )
    listable = sorted({_as_entry(n) for _, n in found if not _is_code(n)})
    allow_hint = f"{ALLOW_HINT.format(entry=', '.join(map(repr, listable)))} if you trust it, or " if listable else ""
    return Refused(
        f"{prefix}{said}: not on lit_sb3's allow-list (loading it would run code); {allow_hint}"
        f"{TRUST_HINT.format(trusted=trusted)}"
    )


class NotAllowed(Refused):
    """A pickle names ``name``, which is not on the allow-list."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


class AllowListUnpickler(pickle.Unpickler):
    """Unpickles only allow-listed globals; GLOBAL, STACK_GLOBAL, INST and extension codes all come here, and the
    object is taken from the list (a dotted name is never resolved attribute by attribute)."""

    def find_class(self, module: str, name: str) -> Any:
        found = allowed_name(f"{module}:{name}")
        if found is None:
            raise pickle.UnpicklingError(f"{module}:{name}")
        return found


def loads(data: bytes, what: str, trusted: str = "load(..., trusted=True)") -> Any:
    """``data`` unpickled through the allow-list; raises :class:`Refused` (one line, naming ``what``) otherwise."""
    import io

    try:
        return AllowListUnpickler(io.BytesIO(data)).load()
    except pickle.UnpicklingError as error:
        name = str(error)
        if ":" in name and " " not in name:  # find_class's refusal: the name
            raise NotAllowed(str(refusal([(what, name)], trusted)), name) from None
        raise Refused(f"{what}: not a readable pickle ({name})") from None
    except Refused:
        raise
    except Exception as error:  # a damaged pickle, or allow-listed data built from arguments it refuses
        raise Refused(f"{what}: not a readable pickle ({type(error).__name__}: {error})") from None


# ------------------------------------------------------------------ torch checkpoints


def weights_only_refusal(error: Exception, what: str) -> Refused:
    """One line for torch's multi-line ``weights_only`` refusal (``error``) of the file ``what`` names."""
    import re

    found = re.search(r"GLOBAL (\S+)", str(error))
    return Refused(
        f"{what} names {found.group(1) if found else 'objects'}, which torch.load(weights_only=True) refuses "
        f"(loading it would run code)"
    )


def zip_tensor_refusal(path: str | Path, error: Exception, prefix: str = "load") -> Refused:
    """One line for an SB3-format zip whose tensor file (``policy.pth``, ``pytorch_variables.pth``, ...) torch
    refused to read with ``weights_only=True`` (``error``): SB3 reads them so, trusted or not."""
    import io
    import zipfile

    entry = "a .pth entry"
    with zipfile.ZipFile(path) as archive:
        for name in (n for n in archive.namelist() if n.endswith(".pth")):
            try:
                unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(archive.read(name)))
            except Exception:  # (a damaged entry is as much the culprit)
                unsafe = [name]
            if unsafe:
                entry = name
                break
    return weights_only_refusal(error, f"{prefix}: {path}: {entry}")


def checkpoint_globals(path: str | Path) -> list[Any]:
    """``(object, name)`` for each global ``path`` references, for ``torch.serialization.safe_globals``; raises
    :class:`CheckpointError` (one line) when it is missing, unreadable (truncated, not a torch file) or references
    anything outside the allow-list."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint: no such file: {path}")
    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception as error:  # torch raises RuntimeError/OSError/pickle errors for damaged files
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(
            f"checkpoint: {path} is not a readable checkpoint (truncated or not written by torch.save): {reason}"
        ) from None
    allowed: list[Any] = []  # (object, name) pairs, then numpy's dtype classes
    refused: list[str] = []
    for name in names:
        obj = allowed_name(name)
        if obj is None:
            refused.append(name)
        else:
            allowed.append((obj, name))  # torch matches the name the file uses, which is this exact entry
    if refused:
        raise CheckpointError(
            str(
                refusal(
                    [(f"checkpoint: {path}", name) for name in refused], "load_from_checkpoint(..., weights_only=False)"
                )
            )
        )
    if allowed:  # numpy builds its dtype objects (allow-listed) while unpickling arrays without naming them
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
