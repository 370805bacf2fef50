"""Run identity: which directory a configured run owns, and the ids the analysis groups runs by.

A run is its config. The layout is defined here, once: Hydra's ``hydra.run.dir`` / ``hydra.sweep.dir`` /
``hydra.sweep.subdir`` and ``algo_dir`` call these functions through resolvers (``lit_bench/__init__.py``), and the
harness calls them directly::

    <out_dir>/<sweep>/<algo>[@<backend>]/<env>/seed_<n>                      the composed defaults
    <out_dir>/<sweep>/<algo>[@<backend>]/<env>/<variant>-<config_id>/seed_<n>   any other config

The defaults are what ``algo=<algo> env=<env> backend=<backend>`` composes (tuned ``algo_env`` values included).
``variant`` is a readable slug of the keys that differ from them (``algo.learning_rate=0.001,budget=3000``);
``config_id`` hashes the whole resolved config except the seed and the keys in ``NOT_IDENTITY``, so every seed of a
config shares it, and two configs never share a directory.

A run's identity is what changes the numbers it produces:

- ``algo.*``: the algorithm (``_target_``) and every hyperparameter;
- ``env.*``: env id, kwargs, ``n_envs``, wrappers, normalization, frame stacking;
- ``budget`` (env steps) and ``seed`` (``seed_<n>``: every seed of a config shares the ``config_id``);
- ``backend`` and ``parity``: whose implementation and which optimizer settings;
- ``eval.every``, ``eval.episodes``, ``eval.deterministic``: the evaluation protocol (what the scores are);
- ``trainer.*`` but the two below (precision, accelerator, devices, strategy change the arithmetic);
- ``checkpoint.replay_buffer``: what a resumed run continues from (without it a resume is no longer exact);
- ``batched`` when true: the seed was trained in a batched seed group (it draws the random numbers of its own
  process's run, but the batched kernels round differently, so its numbers are that run's to float32 rounding, not
  to the last bit, and drift from them over long runs; they do not depend on the group's other seeds);
- ``threads``: torch's intra-op threads change the order of its float sums (PPO on CartPole, 2,048 steps: parameters
  differ by up to 2e-5 between 1 and 2 threads), so runs with other thread counts are other runs.

``OBSERVATION`` keys say how a run is watched, not what it computes, so they never change its directory: they are
recorded in ``summary.json`` (``observation``) and hashed at their shipped defaults (so a directory made before they
became observation settings keeps its name). Each was checked to leave the results bit for bit unchanged
(docs/guides/harness.md, "Run identity"): the loggers, the progress bar and Lightning's logging interval,
``log_interval``, evaluation videos, the checkpoint interval (exact resume: a checkpoint only reads the state) and the
live console (``console.*``).
``NOT_IDENTITY`` keys say how a run is launched, scored or placed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.config.resources import conf_dir
from lit_bench.store.format import ID_CHARS, VARIANT_DIR

CONF_DIR = conf_dir()  # the built-in config groups (lit_bench.config.resources: a wheel's or the clone's)
# How a run is launched, scored or placed, not what it computes: changing these never makes it another run.
NOT_IDENTITY = (
    "force",
    "objective",
    "out_dir",
    "sweep",
    "hpo",
    "console",
    "stop_timeout_s",
    "step_timeout_s",
    "seeds_per_process",
    "seed_group",
)
# How a run is observed: recorded, never part of the directory; hashed at these values (the shipped defaults)
OBSERVATION: dict[str, Any] = {
    "logger": {"extra": {}},
    "trainer.enable_progress_bar": False,
    "trainer.log_every_n_steps": 1,
    "eval.video": False,
    "eval.video_every": None,
    "log_interval": None,
    "checkpoint.every": None,
}
OBSERVATION_KEYS = (*OBSERVATION, "console")
BATCHED = "batched"  # true: the seed was trained in a batched seed group (lit_bench.run.batched): other last bits
_ABSENT = object()
SLUG_MAX = 80  # characters of the readable part of a directory name; the config_id keeps longer ones distinct
_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+-]+")
_defaults_cache: dict[tuple[str, ...], dict[str, Any]] = {}


@dataclass(frozen=True)
class RunIdentity:
    subdir: Path  # relative to <out_dir>/<sweep>
    root: Path  # the run's directory: <out_dir>/<sweep>/<subdir>
    config_id: str  # the config without its seed
    config_hash: str  # the config with its seed
    variant: str  # "" for the composed defaults
    overrides: list[str]  # key=value of every difference from the composed defaults
    # a seed trained in a batched group: the identity of its config trained ungrouped (the report shows it as a seed
    # of that config); None otherwise
    unbatched: RunIdentity | None = None


def resolved(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain data, without Hydra's own node."""
    keys = [str(k) for k in cfg if k != "hydra"]
    container = OmegaConf.to_container(OmegaConf.masked_copy(cfg, keys), resolve=True)
    assert isinstance(container, dict)
    return cast("dict[str, Any]", container)  # its keys are the str keys selected above


def _digest(data: Any, chars: int) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:chars]


def _lookup(config: dict[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _identity(config: dict[str, Any]) -> dict[str, Any]:
    kept = copy.deepcopy({k: v for k, v in config.items() if k not in (*NOT_IDENTITY, "seed", "hydra")})
    if not kept.get(BATCHED, False):  # hashed only when true: every run id made before the key existed is kept
        kept.pop(BATCHED, None)
    for dotted, value in OBSERVATION.items():
        *parents, leaf = dotted.split(".")
        node = _lookup(kept, ".".join(parents)) if parents else kept
        if isinstance(node, dict) and leaf in node:
            node[leaf] = copy.deepcopy(value)
    return kept


def observation(config: dict[str, Any]) -> dict[str, Any]:
    """The run's observation settings (``OBSERVATION_KEYS`` it has), as ``summary.json`` records them."""
    found = {key: _lookup(config, key) for key in OBSERVATION_KEYS}
    return {key: value for key, value in found.items() if value is not _ABSENT}


def config_id(config: dict[str, Any]) -> str:
    return _digest(_identity(config), ID_CHARS)


def config_hash(config: dict[str, Any]) -> str:
    return _digest({**_identity(config), "seed": config.get("seed")}, 16)


def differences(config: Any, defaults: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of every leaf where ``config`` differs from ``defaults``; removed keys get ``~key``."""
    if not (isinstance(config, dict) and isinstance(defaults, dict)):
        return [] if config == defaults else [(prefix, config)]
    found: list[tuple[str, Any]] = []
    for key in sorted(set(config) | set(defaults), key=str):
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in config:
            found.append((f"~{path}", None))
        elif key not in defaults:
            found.append((path, config[key]))
        else:
            found += differences(config[key], defaults[key], path)
    return found


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, separators=(",", ":"))


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str) and "." in value and " " not in value:
        return value.rsplit(".", 1)[-1]  # a class path: its name
    if isinstance(value, dict) and "_target_" in value:
        return _short(value["_target_"])
    if isinstance(value, list) and value:
        return "+".join(_short(v) for v in value)
    return _text(value)[:24]


def slug(diffs: list[tuple[str, Any]]) -> str:
    """A path-safe, readable name for a list of differences (about ``SLUG_MAX`` characters at most)."""
    parts = [f"{key[1:]}=deleted" if key.startswith("~") else f"{key}={_short(value)}" for key, value in diffs]
    parts = [_UNSAFE.sub("_", p)[: SLUG_MAX - 4] for p in parts]
    kept = parts[:1]
    for part in parts[1:]:
        if len(",".join([*kept, part])) > SLUG_MAX - 4:  # room for ",+NN"
            return ",".join([*kept, f"+{len(parts) - len(kept)}"])
        kept.append(part)
    return ",".join(kept)


def _compose_defaults(config_name: str, overrides: list[str]) -> dict[str, Any]:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from lit_bench.config.sources import install

    if GlobalHydra.instance().is_initialized():  # inside lit-bench: Hydra's own search path
        return resolved(compose(config_name, overrides=overrides))
    install()
    with initialize_config_dir(config_dir=str(CONF_DIR), **VERSION_BASE):  # run(cfg) called from Python
        return resolved(compose(config_name, overrides=overrides))


def composed_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """The config ``algo=<algo> env=<env> backend=<backend>`` composes, without any other override (cached)."""
    config_name = "config"
    try:
        from hydra.core.hydra_config import HydraConfig

        config_name = HydraConfig.get().job.config_name or config_name
    except ValueError:  # HydraConfig not set
        pass
    overrides = [f"algo={config['algo_name']}", f"env={config['env_name']}", f"backend={config['backend']}"]
    key = (config_name, *overrides)
    if key not in _defaults_cache:
        _defaults_cache[key] = _compose_defaults(config_name, overrides)
    return _defaults_cache[key]


def identify(cfg: DictConfig | dict[str, Any]) -> RunIdentity:
    config = resolved(cfg) if isinstance(cfg, DictConfig) else cfg
    diffs = differences(_identity(config), _identity(composed_defaults(config)))
    cid = config_id(config)
    variant = slug(diffs) if diffs else ""
    subdir = Path(str(config["algo_dir"])) / str(config["env_name"])
    if variant:
        subdir /= f"{variant}-{cid}"
    subdir /= f"seed_{config['seed']}"
    return RunIdentity(
        subdir=subdir,
        root=sweep_path(config) / subdir,
        config_id=cid,
        config_hash=config_hash(config),
        variant=variant,
        overrides=[key if key.startswith("~") else f"{key}={_text(value)}" for key, value in diffs],
        unbatched=identify({**config, BATCHED: False}) if config.get(BATCHED) else None,
    )


def algo_dir(algo: str, backend: str, parity: bool) -> str:
    """``<algo>`` for lit_sb3, ``<algo>@<backend>`` otherwise (a backend comparison never shares a directory), and
    ``<algo>+parity`` for lit_sb3 with SB3's exact optimizer (other runs than the defaults)."""
    return algo + ("" if backend == "lit" else f"@{backend}") + ("+parity" if parity and backend == "lit" else "")


def sweep_path(config: DictConfig | dict[str, Any]) -> Path:
    """``<out_dir>/<sweep>``: the directory of a sweep's runs (and of its job records)."""
    return Path(str(config["out_dir"])) / str(config["sweep"])


def run_path(config: DictConfig | dict[str, Any]) -> Path:
    """The run's directory, ``<out_dir>/<sweep>/<subdir>`` (``identify(config).root``)."""
    return identify(config).root


def run_subdir(_root_: DictConfig) -> str:
    """``${run_subdir:}``: the run's directory relative to ``<out_dir>/<sweep>`` (for Hydra's own dirs)."""
    return str(identify(_root_).subdir)


def parse_run_path(run_dir: Path) -> dict[str, Any]:
    """algo / env / seed / sweep / variant of a run directory from its path (for runs without ``summary.json``)."""
    parts = list(run_dir.parts)
    seed = parts.pop()[len("seed_") :] if parts and parts[-1].startswith("seed_") else None
    variant = ""
    if parts and VARIANT_DIR.search(parts[-1]):
        variant = VARIANT_DIR.sub("", parts.pop())
    found: dict[str, Any] = {"seed": int(seed) if seed and seed.isdigit() else None, "variant": variant}
    for key in ("env", "algo", "sweep"):
        found[key] = parts.pop() if parts else None
    return found
