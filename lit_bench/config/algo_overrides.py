"""``algo.<key>=<value>`` in a sweep over algorithms: set for every swept algorithm that has the key.

Hydra composes a multirun's base config with the default algorithm before it sweeps, so ``-m algo=sac,td3
algo.learning_starts=500`` fails there (PPO has no ``learning_starts``), although each job's own algorithm has it.
Before Hydra parses the command line, :func:`rewrite` checks each such override against every swept algorithm's
composed config: when all of them have the key it becomes ``++algo.<key>=<value>`` (set in each job, where the key
exists); when one lacks it, the command is refused in one line naming that algorithm. Anything else is left as is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, Glob, Override
from omegaconf import OmegaConf

from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.config.identity import CONF_DIR

MULTIRUN_FLAGS = ("-m", "--multirun")
_MISSING = object()


class OverrideError(ValueError):
    """A per-algorithm override that a swept algorithm does not have (the message is the one line to print)."""


def _algo_names(override: Override, search_path: list[str]) -> list[str] | None:
    """The algorithms an ``algo=`` sweep names (None: not a sweep this module understands)."""
    value = override.value()
    if isinstance(value, ChoiceSweep):
        return [str(v) for v in override.sweep_string_iterator()]
    if isinstance(value, Glob):
        names = {p.stem for d in [str(CONF_DIR), *search_path] for p in (Path(d) / "algo").glob("*.yaml")}
        return value.filter(sorted(names))
    return None


def _search_path(args: list[str], parsed: list[Override]) -> list[str]:
    """User config directories given on the command line (``--config-dir`` / ``-cd``, ``hydra.searchpath``)."""
    dirs: list[str] = []
    for flag in ("--config-dir", "-cd"):
        for i, arg in enumerate(args[:-1]):
            if arg == flag:
                dirs.append(args[i + 1])
        dirs += [arg.split("=", 1)[1] for arg in args if arg.startswith(f"{flag}=")]
    for override in parsed:
        value = override.value()
        if override.key_or_group == "hydra.searchpath" and isinstance(value, list):
            dirs += [str(v).removeprefix("file://") for v in value]
    return dirs


def _algo_config(name: str, search_path: list[str]) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    overrides = [f"algo={name}"]
    if search_path:
        overrides.append("hydra.searchpath=[" + ",".join(f"file://{Path(d).resolve()}" for d in search_path) + "]")
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), **VERSION_BASE):
            return compose("config", overrides=overrides).algo
    finally:
        GlobalHydra.instance().clear()


def rewrite(args: list[str]) -> list[str]:
    """``args`` (the command line without the program) with the per-algorithm overrides of an algorithm sweep made
    to apply to each job; raises :class:`OverrideError` for a key a swept algorithm lacks."""
    if not any(flag in args for flag in MULTIRUN_FLAGS):
        return args
    positions = [i for i, arg in enumerate(args) if "=" in arg and not arg.startswith("-")]
    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides([args[i] for i in positions])
    except Exception:  # Hydra reports a malformed command line itself
        return args
    choice = next((o for o in parsed if o.key_or_group == "algo" and o.package is None and not o.is_delete()), None)
    per_algo = [
        (i, o) for i, o in zip(positions, parsed) if o.key_or_group.startswith("algo.") and args[i][0] not in "+~"
    ]
    if choice is None or not choice.is_sweep_override() or not per_algo:
        return args
    search_path = _search_path(args, parsed)
    names = _algo_names(choice, search_path)
    if not names:
        return args
    try:
        configs = {name: _algo_config(name, search_path) for name in names}
    except Exception:  # an unknown algorithm (or a broken config): Hydra reports it, in its words
        return args
    rewritten = list(args)
    for i, override in per_algo:
        key = override.key_or_group.removeprefix("algo.")
        lacking = [n for n, cfg in configs.items() if OmegaConf.select(cfg, key, default=_MISSING) is _MISSING]
        if lacking:
            having = [n for n in names if n not in lacking]
            has = (
                f"only {', '.join(having)} of the sweep {'has' if len(having) == 1 else 'have'} it"
                if having
                else "no algorithm of the sweep has it"
            )
            verb = "has" if len(lacking) == 1 else "have"
            raise OverrideError(
                f"{args[i]}: algo={', algo='.join(lacking)} {verb} no hyperparameter {key} ({has}); "
                f"sweep the algorithms that have it separately"
            )
        rewritten[i] = f"++{args[i]}"
    return rewritten
