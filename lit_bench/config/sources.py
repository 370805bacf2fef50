"""The config groups Hydra composes from: the user's config directories layered over the built-in ones, and variants.

User directories come from ``--config-dir``, ``hydra.searchpath=[...]`` (both folded into ``LIT_BENCH_CONFIG_PATH``
by the ``lit-bench`` command) and ``LIT_BENCH_CONFIG_PATH`` itself (``os.pathsep``-separated, first wins). Each may
hold any of the groups (``algo/``, ``env/``, ``algo_env/``, ``suite/``, ``hydra/launcher/``, ...): a new name adds an
option, a built-in's name replaces the built-in (one line on stderr says so). Hydra itself would search such
directories *after* the built-in ones, so a built-in name could not be replaced: here they are one layered source, in
the place of Hydra's main config directory.

A **variant** is an algo config with ``base: <algo>``: it composes ``algo/<algo>.yaml`` under its own keys, and when it
has no ``algo_env/<variant>_<env>.yaml`` of its own it gets the base's tuned ``algo_env/<algo>_<env>.yaml`` with its
own keys applied again on top (its file wins over the base's tuned values, the command line over both). ``base`` stays
in the algo node (a reserved key, never a constructor argument): the analysis reads it from the run's summary.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

from hydra.core.object_type import ObjectType
from hydra.errors import ConfigCompositionException
from hydra.plugins.config_source import ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import DictConfig, OmegaConf

from lit_bench.config.checks import VARIANT_BASE as BASE_KEY
from lit_bench.config.resources import conf_dir

ENV_VAR = "LIT_BENCH_CONFIG_PATH"
SCHEME = "litbench"
_announced: set[str] = set()


class UserConfigError(ValueError):
    """A user config directory that cannot be used: one line."""


def user_config_dirs(value: str | None = None) -> list[Path]:
    """The user's config directories, highest precedence first (``LIT_BENCH_CONFIG_PATH`` unless ``value``)."""
    text = os.environ.get(ENV_VAR, "") if value is None else value
    dirs = []
    for entry in filter(None, text.split(os.pathsep)):
        path = Path(entry).expanduser().resolve()
        if not path.is_dir():
            raise UserConfigError(
                f"{ENV_VAR}: {entry} is not a directory (config directories: algo/, env/, algo_env/, suite/ ...)"
            )
        others = _writable_by_others(path)
        if others is not None:
            raise UserConfigError(
                f"{ENV_VAR}: {entry}: {others}; the code a config directory names is trusted, so only you may "
                f"write it (chmod go-w, or copy it to a directory of your own)"
            )
        if path not in dirs:
            dirs.append(path)
    return dirs


def _writable_by_others(directory: Path) -> str | None:
    """How someone else could change what ``directory`` holds (it, a folder or a YAML file in it is group- or
    world-writable, or owned by another user than you or root), or None."""
    for path in [directory, *(p for p in sorted(directory.rglob("*")) if p.is_dir() or p.suffix == ".yaml")]:
        info = path.stat()
        if info.st_uid not in (os.geteuid(), 0):
            return f"{path} is owned by another user (uid {info.st_uid})"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{path} is {'world' if info.st_mode & stat.S_IWOTH else 'group'}-writable"
    return None


def _searchpath_entries(value: str) -> list[str]:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    entries = OverridesParser.create().parse_override(f"hydra.searchpath={value}").value()
    entries = entries if isinstance(entries, list) else [entries]
    found = []
    for entry in map(str, entries):
        if entry.startswith("pkg://"):
            from importlib.resources import files

            module = entry[len("pkg://") :].strip("/").replace("/", ".")
            found.append(str(files(module)))
        else:
            found.append(entry.removeprefix("file://"))
    return found


def fold_command_line(argv: list[str]) -> None:
    """Put the command line's ``--config-dir`` / ``-cd`` directory, then its ``hydra.searchpath=[...]`` ones (Hydra's
    order), in front of ``LIT_BENCH_CONFIG_PATH`` (argv is left as it is: Hydra adds them once more, behind these)."""
    config_dirs: list[str] = []
    searchpath: list[str] = []
    for i, arg in enumerate(argv):
        if arg in ("--config-dir", "-cd") and i + 1 < len(argv):
            config_dirs.append(argv[i + 1])
        elif arg.startswith("--config-dir="):
            config_dirs.append(arg.split("=", 1)[1])
        elif arg.startswith("hydra.searchpath="):
            searchpath += _searchpath_entries(arg.split("=", 1)[1])
    found = config_dirs + searchpath
    if found:
        os.environ[ENV_VAR] = os.pathsep.join([*found, *filter(None, os.environ.get(ENV_VAR, "").split(os.pathsep))])


def _name(config_path: str) -> str:
    return config_path[: -len(".yaml")] if config_path.endswith(".yaml") else config_path


class LayeredConfigSource(ConfigSource):
    """``litbench://<dir>:<dir>:...``: the first directory that has a config serves it; variants resolved."""

    def __init__(self, provider: str, path: str) -> None:
        super().__init__(provider=provider, path=path)
        from hydra._internal.core_plugins.file_config_source import FileConfigSource

        self.dirs = [Path(d) for d in path[len(f"{SCHEME}://") :].split(os.pathsep) if d]
        self.layers = [FileConfigSource(provider, str(d)) for d in self.dirs]

    @staticmethod
    def scheme() -> str:
        return SCHEME

    def _layer(self, config_path: str) -> Any:
        return next((layer for layer in self.layers if layer.is_config(config_path)), None)

    def available(self) -> bool:
        return any(layer.available() for layer in self.layers)

    def is_group(self, config_path: str) -> bool:
        return any(layer.is_group(config_path) for layer in self.layers)

    def is_config(self, config_path: str) -> bool:
        return self._layer(config_path) is not None or self._tuned_base(_name(config_path)) is not None

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        found = {
            name
            for layer in self.layers
            if layer.is_group(config_path)
            for name in layer.list(config_path, results_filter)
        }
        return sorted(found)

    def load_config(self, config_path: str) -> ConfigResult:
        name = _name(config_path)
        layer = self._layer(config_path)
        if layer is None:
            tuned = self._tuned_base(name)
            if tuned is None:
                return self.layers[-1].load_config(config_path)  # (raises Hydra's "not found")
            return self._variant_tuned(*tuned)
        result = layer.load_config(config_path)
        if name.startswith("algo/") and isinstance(result.config, DictConfig) and BASE_KEY in result.config:
            base = self.base_of(name[len("algo/") :])
            defaults = list(result.config.get("defaults", []))
            result.config.defaults = [base, *defaults] if "_self_" in defaults else [base, *defaults, "_self_"]
        return result

    def _own(self, algo: str) -> DictConfig | None:
        layer = self._layer(f"algo/{algo}.yaml")
        if layer is None:
            return None
        config = layer.load_config(f"algo/{algo}.yaml").config
        return config if isinstance(config, DictConfig) else None

    def base_of(self, algo: str) -> str | None:
        """The built-in algorithm ``algo`` derives from (None: not a variant); one line for a ``base`` that names no
        usable algo config."""
        own = self._own(algo)
        if own is None or BASE_KEY not in own:
            return None
        base = own[BASE_KEY]
        where = f"algo/{algo}.yaml: {BASE_KEY}: {base}"
        if not isinstance(base, str) or base == algo or self._own(base) is None:
            names = (n.removeprefix("algo/") for n in self.list("algo", ObjectType.CONFIG))
            choices = ", ".join(n for n in names if BASE_KEY not in (self._own(n) or {}))  # (not variants)
            raise ConfigCompositionException(f"{where}: not an algo config; choose one of {choices}")
        if self.base_of(base) is not None:
            raise ConfigCompositionException(
                f"{where} is itself a variant (of {self.base_of(base)}); name the algorithm it varies as {BASE_KEY}"
            )
        return base

    def _tuned_base(self, name: str) -> tuple[str, str, str] | None:
        """``algo_env/<variant>_<env>`` without a file: (variant, its base, env) when the base has a tuned file."""
        if not name.startswith("algo_env/"):
            return None
        pair = name[len("algo_env/") :]
        for cut in (i for i, c in enumerate(pair) if c == "_"):
            algo, env = pair[:cut], pair[cut + 1 :]
            base = self.base_of(algo) if self._own(algo) is not None else None
            if base is not None and self._layer(f"algo_env/{base}_{env}.yaml") is not None:
                return algo, base, env
        return None

    def _variant_tuned(self, algo: str, base: str, env: str) -> ConfigResult:
        tuned_path = f"algo_env/{base}_{env}.yaml"
        tuned = self._layer(tuned_path).load_config(tuned_path)
        if tuned.header.get("package") != "_global_":
            return tuned
        own = self._own(algo)
        assert own is not None
        own_items = OmegaConf.to_container(own)
        assert isinstance(own_items, dict)
        again = {k: v for k, v in own_items.items() if k not in ("defaults", BASE_KEY)}
        merged = OmegaConf.merge(tuned.config, {"algo": again})
        return ConfigResult(provider=tuned.provider, path=tuned.path, config=merged, header=tuned.header)


def replaced_builtins(user_dirs: list[Path], builtin: Path) -> list[str]:
    """One line per built-in config a user directory replaces (the first user directory that has it wins)."""
    lines, seen = [], set()
    for directory in user_dirs:
        for path in sorted(directory.rglob("*.yaml")):
            relative = path.relative_to(directory).as_posix()
            if relative not in seen and (builtin / relative).is_file():
                lines.append(f"lit-bench: {relative} from {directory} replaces the built-in {relative}")
            seen.add(relative)
    return lines


class LitBenchSearchPath(SearchPathPlugin):
    """In lit_bench's Hydra apps only (the main config directory is the built-in one): the layered source instead."""

    def manipulate_search_path(self, search_path: Any) -> None:
        builtin = conf_dir().resolve()
        for element in search_path.get_path():
            path = str(element.path)
            if element.provider == "main" and Path(path.removeprefix("file://")).resolve() == builtin:
                user_dirs = user_config_dirs()
                element.path = f"{SCHEME}://" + os.pathsep.join(map(str, [*user_dirs, builtin]))
                for line in replaced_builtins(user_dirs, builtin):
                    if line not in _announced:
                        _announced.add(line)
                        print(line, file=sys.stderr)


def install() -> None:
    """Register the layered source and the search-path plugin with Hydra (before a Hydra app or ``initialize``)."""
    from hydra.core.plugins import Plugins

    plugins = Plugins.instance()
    for plugin in (LayeredConfigSource, LitBenchSearchPath):
        plugins.register(plugin)


def find_config(group: str, name: str) -> Path | None:
    """``<group>/<name>.yaml`` in the user's directories or the built-in ones (for tools reading a group directly)."""
    for directory in [*user_config_dirs(), conf_dir()]:
        path = directory / group / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def group_options(group: str) -> list[str]:
    """Every option of a group across the user's directories and the built-in ones."""
    return sorted({p.stem for d in [*user_config_dirs(), conf_dir()] for p in (d / group).glob("*.yaml")})
