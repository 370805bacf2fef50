"""Reading ``save`` zips without unpickling: SB3's ``data`` JSON minus its ``:serialized:`` (cloudpickle) entries.

SB3 stores every value JSON cannot hold (spaces, classes, schedules, action noise) as base64 cloudpickle, and
unpickling runs code. lit_sb3's ``save`` adds a mirror of those values in plain JSON (``lit_sb3_safe``): spaces as
dicts, classes by name, allow-listed objects (see :mod:`lit_sb3.common.safe_load`) by class name and attributes.
``load`` reads the mirror, or the caller's ``custom_objects``, and never the pickles unless told ``trusted=True``.
"""

from __future__ import annotations

import enum
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from lit_sb3.common.envs import space_from_dict, space_to_dict
from lit_sb3.common.safe_load import resolve_trusted, trusted_name

SAFE_KEY = "lit_sb3_safe"


class Unencodable(TypeError):
    """A value with no plain-JSON form (a class or object outside the allow-list, a lambda, ...)."""


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def encode(value: Any) -> Any:
    """Plain JSON for ``value``, or :class:`Unencodable`."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, (list, tuple)):
        return {"__list__" if isinstance(value, list) else "__tuple__": [encode(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"__dict__": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, spaces.Space):
        return {"__space__": space_to_dict(value)}
    if isinstance(value, type) and trusted_name(_name(value)):
        return {"__class__": _name(value)}
    if isinstance(value, enum.Enum) and trusted_name(_name(type(value))):
        return {"__enum__": _name(type(value)), "value": encode(value.value)}
    if hasattr(value, "__dict__") and trusted_name(_name(type(value))):
        return {"__object__": _name(type(value)), "state": encode(vars(value))}
    raise Unencodable(f"{type(value).__name__} has no plain JSON form")


def _trusted_class(name: str) -> Any:
    cls = resolve_trusted(name)
    if not isinstance(cls, type):
        raise ValueError(f"load: the file names {name}, which is not on lit_sb3's allow-list")
    return cls


def decode(value: Any) -> Any:
    """Inverse of :func:`encode`; only allow-listed classes are looked up, objects are rebuilt without ``__init__``."""
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        return np.asarray(value["__ndarray__"], dtype=value["dtype"])
    if "__list__" in value:
        return [decode(v) for v in value["__list__"]]
    if "__tuple__" in value:
        return tuple(decode(v) for v in value["__tuple__"])
    if "__dict__" in value:
        return {k: decode(v) for k, v in value["__dict__"].items()}
    if "__space__" in value:
        return space_from_dict(value["__space__"])
    if "__class__" in value:
        return _trusted_class(value["__class__"])
    if "__enum__" in value:
        return _trusted_class(value["__enum__"])(decode(value["value"]))
    if "__object__" in value:
        obj = object.__new__(_trusted_class(value["__object__"]))
        obj.__dict__.update(decode(value["state"]))
        return obj
    raise ValueError(f"load: unknown entry in {SAFE_KEY}: {sorted(value)}")


def safe_mirror(data: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``data`` that have a plain-JSON form, encoded (the others are left out)."""
    mirror = {}
    for key, value in data.items():
        try:
            mirror[key] = encode(value)
        except Unencodable:
            continue
    return mirror


def read_data(path: str | Path, custom_objects: dict[str, Any] | None, needed: set[str]) -> dict[str, Any]:
    """The zip's ``data`` without unpickling: plain values, the ``lit_sb3_safe`` mirror, ``custom_objects``.

    Raises ``ValueError`` (one line) when one of ``needed`` is stored only as a pickle; other pickled entries
    (SB3's bookkeeping: ``_last_obs``, ``lr_schedule``, ...) are not used by ``load`` and are skipped.
    """
    with zipfile.ZipFile(path) as archive:
        if "data" not in archive.namelist():
            raise ValueError(f"load: {path} has no 'data' entry; was it written by save()?")
        raw = json.loads(archive.read("data"))
    mirror = {k: decode(v) for k, v in raw.pop(SAFE_KEY, {}).items()}
    data, pickled = {}, []
    for key, value in raw.items():
        if custom_objects is not None and key in custom_objects:
            data[key] = custom_objects[key]
        elif isinstance(value, dict) and ":serialized:" in value:
            if key in mirror:
                data[key] = mirror[key]
            elif key in needed:
                pickled.append(key)
        else:
            data[key] = value
    if pickled:
        raise ValueError(
            f"load: {path} stores {', '.join(sorted(pickled))} only as pickled code (SB3's ':serialized:' entries), "
            f"which lit_sb3 does not run by default; pass them in custom_objects, or load(..., trusted=True) "
            f"if you trust the file"
        )
    return data
