"""Reading ``save`` zips without running their code: SB3's ``data`` JSON, its pickles only through the allow-list.

SB3 stores every value JSON cannot hold (spaces, classes, schedules, action noise) as base64 cloudpickle, and
unpickling runs code. lit_sb3's ``save`` adds a mirror of those values in plain JSON (``lit_sb3_safe``): spaces as
dicts, classes by name, allow-listed objects (see :mod:`lit_sb3.common.safe_load`) by class name and attributes.
``load`` takes each value the model needs from the caller's ``custom_objects``, else the mirror, else the pickle
read by the allow-list unpickler (how SB3's own zips load); a value naming anything else is refused in one line,
unless the caller trusts the file (``trusted=True``, ``LIT_SB3_TRUST=1``), which unpickles everything.
"""

from __future__ import annotations

import base64
import enum
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from lit_sb3.common.allow_list import Refused, allowed_name
from lit_sb3.common.envs import space_from_dict, space_to_dict
from lit_sb3.common.safe_load import NotAllowed, loads, refusal

SAFE_KEY = "lit_sb3_safe"


class Unencodable(TypeError):
    """A value with no plain-JSON form (a class or object outside the allow-list, a lambda, ...)."""


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _listed(cls: type) -> bool:
    return allowed_name(_name(cls)) is cls


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
    if isinstance(value, type) and _listed(value):
        return {"__class__": _name(value)}
    if isinstance(value, enum.Enum) and _listed(type(value)):
        return {"__enum__": _name(type(value)), "value": encode(value.value)}
    if hasattr(value, "__dict__") and not isinstance(value, type) and _listed(type(value)):
        return {"__object__": _name(type(value)), "state": encode(vars(value))}
    raise Unencodable(f"{type(value).__name__} has no plain JSON form")


def _listed_class(name: Any, enum_class: bool | None = None) -> Any:
    """The allow-listed class ``name`` (an Enum when ``enum_class``, not one when False); :class:`Refused` (the
    name) otherwise."""
    cls = allowed_name(name) if isinstance(name, str) else None
    if not isinstance(cls, type) or (enum_class is not None and issubclass(cls, enum.Enum) != enum_class):
        raise Refused(str(name))
    return cls


def decode(value: Any) -> Any:
    """Inverse of :func:`encode`: only allow-listed classes are looked up (an ``__enum__`` must name an Enum, an
    ``__object__`` a class that is not one); objects are rebuilt without calling ``__init__``."""
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        return np.asarray(value["__ndarray__"], dtype=np.dtype(str(value["dtype"])))
    if "__list__" in value:
        return [decode(v) for v in value["__list__"]]
    if "__tuple__" in value:
        return tuple(decode(v) for v in value["__tuple__"])
    if "__dict__" in value:
        return {k: decode(v) for k, v in value["__dict__"].items()}
    if "__space__" in value:
        return space_from_dict(value["__space__"])
    if "__class__" in value:
        return _listed_class(value["__class__"])
    if "__enum__" in value:
        return _listed_class(value["__enum__"], enum_class=True)(decode(value["value"]))
    if "__object__" in value:
        obj = object.__new__(_listed_class(value["__object__"], enum_class=False))
        obj.__dict__.update(decode(value["state"]))
        return obj
    raise ValueError(f"unknown entry {sorted(value)}")


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
    """The zip's ``data`` without running its code: plain values, ``custom_objects``, the ``lit_sb3_safe`` mirror,
    and the pickled entries ``needed`` names read through the allow-list.

    Raises :class:`Refused` (one line) when a mirror entry or a needed pickle names anything outside the allow-list;
    pickled entries ``load`` does not use (SB3's bookkeeping: ``_last_obs``, ``lr_schedule``, ...) are not read.
    """
    with zipfile.ZipFile(path) as archive:
        if "data" not in archive.namelist():
            raise ValueError(f"load: {path} has no 'data' entry; was it written by save()?")
        raw = json.loads(archive.read("data"))
    custom_objects = custom_objects or {}
    mirror, refused = {}, []
    for key, value in raw.pop(SAFE_KEY, {}).items():
        if key in custom_objects:
            continue
        try:
            mirror[key] = decode(value)
        except Refused as error:
            refused.append((key, str(error)))
        except (ValueError, TypeError, KeyError) as error:
            raise ValueError(f"load: {path}: {key}: unreadable {SAFE_KEY} entry ({error})") from None
    data = {}
    for key, value in raw.items():
        if key in custom_objects:
            data[key] = custom_objects[key]
        elif key in mirror:
            data[key] = mirror[key]
        elif isinstance(value, dict) and ":serialized:" in value:
            if key in needed and key not in dict(refused):
                try:
                    data[key] = loads(_decoded(path, key, value[":serialized:"]), f"load: {path}: {key}")
                except NotAllowed as error:
                    refused.append((key, error.name))
        else:
            data[key] = value
    if refused:
        raise refusal(sorted(refused), "load(..., trusted=True) or custom_objects={...}", prefix=f"load: {path}: ")
    return data


def _decoded(path: str | Path, key: str, serialized: Any) -> bytes:
    try:
        return base64.b64decode(str(serialized).encode())
    except ValueError:
        raise ValueError(f"load: {path}: {key}: not a readable pickled entry") from None
