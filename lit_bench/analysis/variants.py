"""A config's hyperparameters as its variant slug names them (``lit_bench.config.identity.slug``): the overrides it
sets, the composed defaults it keeps of those other configs set (read from its ``config.yaml``), and the order of
configs by their values, so that a sweep's labels say ``learning_rate=0.0003`` and its rows read in order.

A variant lists every difference from the composed defaults of its algorithm and env, so a value it does not set is
that default, the same for every config of the (sweep, algo, env): a few ``config.yaml`` reads serve them all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lit_bench.config.identity import slug
from lit_bench.store.rundir import RunDir

READS_PER_CONFIG = 3  # run directories tried for a readable config.yaml (a failed run may have none)
_ABSENT = object()


def split_variant(variant: str) -> dict[str, str]:
    """``key=value`` pairs of a variant slug; "" (the defaults) has none."""
    pairs: dict[str, str] = {}
    last = None
    for part in str(variant or "").split(","):
        key, sep, value = part.partition("=")
        if sep:
            pairs[key], last = value, key
        elif part.startswith("+") and part[1:].isdigit():
            pairs[part] = ""  # "+3": the slug's count of differences left out
        elif last is not None:
            pairs[last] += "," + part  # a value with a comma in it (a list or a mapping)
    return pairs


def keys_of(variants: Iterable[str]) -> list[str]:
    """The hyperparameters any of ``variants`` sets, sorted (the slugs' ``+N`` counts left out)."""
    return sorted({k for v in variants for k in split_variant(v) if not _cut_count(k)})


def kept_defaults(
    configs: Sequence[tuple[str, str, str, str]], run_dirs: Sequence[Sequence[str]], keys: Sequence[str]
) -> list[str | None]:
    """Per config ``(sweep, algo, env, variant)``: the values of ``keys`` it does not set, as slug text
    (``algo.learning_rate=0.0003,algo.n_steps=2048``; a key its config does not have left out), read from a
    ``config.yaml`` of its ``run_dirs``; None when none of them is readable.

    One read per (sweep, algo, env) and set of keys kept: a value kept by one config is every such config's (a
    variant cut short, ``+N``, reads its own: what it sets is not all named)."""
    known: dict[tuple[str, str, str], dict[str, Any]] = {}  # (sweep, algo, env) -> the defaults read so far
    texts: list[str | None] = []
    for (sweep, algo, env, variant), dirs in zip(configs, run_dirs):
        pairs = split_variant(variant)
        missing = [k for k in keys if k not in pairs]
        cut = any(_cut_count(k) for k in pairs)
        group = known.setdefault((sweep, algo, env), {})
        if cut or any(k not in group for k in missing):
            config = _first_config(dirs)
            if config is None:
                texts.append(None)
                continue
            values = {k: _lookup(config, k) for k in missing}
            if not cut:
                group.update(values)
        else:
            values = {k: group[k] for k in missing}
        texts.append(",".join(slug([(k, v)]) for k, v in values.items() if v is not _ABSENT))
    return texts


def order_key(variant: str, kept: str | None, keys: Sequence[str]) -> tuple[tuple[int, float, str], ...]:
    """Sorts configs by their values of ``keys`` in turn: numbers in numeric order, then other values by name; a
    value unknown (no readable config) first."""
    values = {**split_variant(kept or ""), **split_variant(variant)}
    return tuple(_rank(values.get(k)) for k in keys)


def _rank(value: str | None) -> tuple[int, float, str]:
    if value is None:
        return (0, 0.0, "")
    try:
        number = float(value)
    except ValueError:
        return (2, 0.0, value)
    return (1, number, "") if not math.isnan(number) else (2, 0.0, value)


def _cut_count(key: str) -> bool:
    return key.startswith("+") and key[1:].isdigit()


def _first_config(run_dirs: Sequence[str]) -> dict[str, Any] | None:
    for run_dir in list(run_dirs)[:READS_PER_CONFIG]:
        config = RunDir(Path(run_dir)).read_config()
        if config is not None:
            return config
    return None


def _lookup(config: dict[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        node = node.get(part, _ABSENT) if isinstance(node, dict) else _ABSENT
    return node
