"""What a run directory's ``config.yaml`` may name before anything rebuilds a run from it (``enjoy``).

A run's config names code in three ways: ``_target_`` nodes (and the ``path`` of a ``hydra.utils.get_class`` /
``get_method`` / ``get_object`` node, including every node inside ``_args_`` lists), ``env.package`` (a module
imported to register env ids) and, through ``algo._target_``, the algorithm class. Each name must be one the
harness's own config groups (``conf/``: algo, env, algo_env, ...) or the user's config directories in
``LIT_BENCH_CONFIG_PATH`` (only you may write them: see ``sources.user_config_dirs``) give at that same node (list
indices aside: a target a file gives ``env.make`` is not trusted as a wrapper's argument), or an object on lit_sb3's
allow-list (:mod:`lit_sb3.safe_load`, which the user extends with ``allow`` / ``LIT_SB3_ALLOW``); anything else is
refused in one line naming the node and ``--trust``. An interpolation (``${...}``) is refused too: a recorded config
is resolved, and resolvers run code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from lit_bench.config.resources import conf_dir
from lit_bench.config.sources import user_config_dirs
from lit_sb3.common.allow_list import allowed_module, allowed_name

#: Hydra's getters: the node names its ``path``, not the getter, as what runs
GETTERS = ("hydra.utils.get_class", "hydra.utils.get_method", "hydra.utils.get_object")


class UntrustedConfig(ValueError):
    """A run's config names code the harness does not load without ``--trust``: one line, naming the node."""


def code_names(tree: Any, where: str = "") -> Iterator[tuple[str, str, str]]:
    """``(node path, kind, name)`` for each name in ``tree`` that would be imported or called: kind is ``target``
    (a ``_target_`` or a getter's ``path``) or ``package`` (an env package)."""
    if isinstance(tree, dict):
        target = tree.get("_target_")
        if target is not None:
            yield f"{where}._target_" if where else "_target_", "target", str(target)
            if str(target) in GETTERS:  # the path it imports: ``path:``, or its first positional argument
                args = tree.get("_args_")
                if "path" in tree:
                    yield f"{where}.path", "target", str(tree["path"])
                elif isinstance(args, list) and args and not isinstance(args[0], (dict, list)):
                    yield f"{where}._args_[0]", "target", str(args[0])
        package = tree.get("package")
        if package is not None and not isinstance(package, dict):
            for i, module in enumerate([package] if isinstance(package, str) else list(package or [])):
                suffix = "" if isinstance(package, str) else f"[{i}]"
                yield f"{where}.package{suffix}" if where else f"package{suffix}", "package", str(module)
        for key, value in tree.items():
            yield from code_names(value, f"{where}.{key}" if where else str(key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from code_names(value, f"{where}[{i}]")


def harness_names() -> dict[str, dict[str, frozenset[str]]]:
    """kind -> name -> the nodes where it is named (:func:`node_of`), for the targets and packages the harness's own
    config groups name (they ship with the harness: trusted) and those of the user's own config directories named
    by ``LIT_BENCH_CONFIG_PATH`` (the user's word; refused when others can write them, see ``user_config_dirs``)."""
    return _names_in((conf_dir(), *user_config_dirs()))


def node_of(where: str) -> str:
    """A node path with its list indices left out (``env.wrappers[2]._target_`` -> ``env.wrappers[]._target_``): a
    wrapper a config file lists may come at any place of the list."""
    return re.sub(r"\[\d+\]", "[]", where)


def _package(path: Path, directory: Path) -> str:
    """Where a config file's content goes in the composed config: its ``# @package`` header, else its group."""
    with path.open() as lines:
        for line in lines:
            if line.startswith("# @package"):
                package = line.split(maxsplit=2)[2].strip()
                return "" if package == "_global_" else package
            if not line.startswith("#"):
                break
    return ".".join(path.parent.relative_to(directory).parts)


# libyaml's parser where PyYAML was built with it (5-10x faster; the same safe construction): a sweep's parent
# process reads every config file here before it launches
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=8)
def _names_in(conf_dirs: tuple[Path, ...]) -> dict[str, dict[str, frozenset[str]]]:
    found: dict[str, dict[str, set[str]]] = {"target": {}, "package": {}}
    for directory in conf_dirs:
        for path in sorted(directory.rglob("*.yaml")):
            try:
                tree = yaml.load(path.read_text(), Loader=_SAFE_LOADER)
                package = _package(path, directory)
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
            for where, kind, name in code_names(tree):
                found[kind].setdefault(name, set()).add(node_of(f"{package}.{where}" if package else where))
    return {kind: {name: frozenset(nodes) for name, nodes in names.items()} for kind, names in found.items()}


def trusted_name(kind: str, name: str, where: str) -> bool:
    """Whether ``name`` (of ``kind``, see :func:`code_names`) may be loaded from node ``where`` of a run's config
    without --trust: a config file names it at that node (a target a file gives ``env.make`` is not trusted
    anywhere else), or it is on lit_sb3's allow-list."""
    if name in GETTERS or node_of(where) in harness_names()[kind].get(name, ()):
        return True  # (a getter imports only its path, checked as a name of its own)
    if kind == "package":
        return allowed_module(name)
    return allowed_name(name) is not None


def _interpolations(tree: Any, where: str = "") -> Iterator[str]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _interpolations(value, f"{where}.{key}" if where else str(key))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from _interpolations(value, f"{where}[{i}]")
    elif isinstance(tree, str) and "${" in tree:
        yield where


def check_run_config(tree: Any, source: str) -> None:
    """Refuse (:class:`UntrustedConfig`, one line) the first node of ``tree`` (a run's ``config.yaml``, parsed with
    ``yaml.safe_load``) naming code outside the harness's config groups and the allow-list."""
    for where in _interpolations(tree):
        raise UntrustedConfig(
            f"{source}: {where} is an interpolation (${{...}}), which a recorded config never "
            f"holds and resolving could run code; rerun with --trust if you trust this run"
        )
    for where, kind, name in code_names(tree):
        if not trusted_name(kind, name, where):
            what = "an env package" if kind == "package" else "code"
            raise UntrustedConfig(
                f"{source}: {where}={name} names {what} that is neither in the harness's config groups nor on "
                f"lit_sb3's allow-list; rerun with --trust if you trust this run (or allow it: "
                f"LIT_SB3_ALLOW={'module' if kind == 'package' else 'module:qualname'})"
            )


def live_run_targets(overrides: Sequence[str]) -> list[str]:
    """The targets a run composed from the harness's config groups, the user's config directories and this command
    line may instantiate (Hydra 1.4's execution whitelist): those the config files name, and those the command line
    names itself (``..._target_=X``, a getter's ``...path=X``: the user's own word, as on Hydra 1.3)."""
    names = set(harness_names()["target"]) | set(GETTERS)
    for override in overrides:
        key, sep, value = override.lstrip("+~").partition("=")
        if sep and key.rsplit(".", 1)[-1] in ("_target_", "path"):
            names.update(v.strip() for v in value.strip("[]").split(",") if v.strip())
    return sorted(n for n in names if n and "${" not in n)
