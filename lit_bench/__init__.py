"""Hydra benchmarking harness for lit_sb3 (and SB3 as a reference backend).

Layers, bottom up (``tests/lit_bench/test_layers.py`` checks the imports): ``store`` (the run directory on disk),
``config`` (what a run is), ``control`` (sweeps, signals, processes), ``run`` (one run, start to finish),
``analysis`` (run directories -> tables and figures; imports store and config only), ``cli`` (the command-line
tools; nothing imports them).
"""

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from types import CodeType, ModuleType

from lit_bench.config.hydra_versions import register_resolver
from lit_bench.config.identity import algo_dir, run_path, run_subdir, sweep_path
from lit_bench.store.format import MOVED

# The run-directory layout, defined once in lit_bench.config.identity, for conf/config.yaml: Hydra's directories and
# the harness's are the same by construction.
register_resolver("algo_dir", algo_dir)
register_resolver("run_path", lambda _root_: str(run_path(_root_)))
register_resolver("sweep_path", lambda _root_: str(sweep_path(_root_)))
register_resolver("run_subdir", run_subdir)

# python -m lit_bench.<tool> runs lit_bench.cli.<tool>
TOOLS = ("report", "regress", "enjoy", "coverage", "quickstart", "export")
_ALIASES = {**MOVED, **{f"lit_bench.{tool}": f"lit_bench.cli.{tool}" for tool in TOOLS}}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a moved module under its old name as the same module object (an old run directory's ``_target_``s
    keep resolving), and gives ``python -m lit_bench.<tool>`` the tool's code to run as ``__main__``."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname not in _ALIASES:
            return None
        real = importlib.util.find_spec(_ALIASES[fullname])  # its origin becomes sys.argv[0] under python -m
        return importlib.util.spec_from_loader(fullname, self, origin=real.origin if real else None)

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[module.__name__] = importlib.import_module(_ALIASES[module.__name__])  # the import returns it

    def get_code(self, fullname: str) -> CodeType | None:  # runpy (python -m) asks for the code only
        real = importlib.util.find_spec(_ALIASES[fullname])
        assert real is not None and isinstance(real.loader, importlib.abc.InspectLoader)
        return real.loader.get_code(real.name)


sys.meta_path.insert(0, _Alias())  # before any path finder: these names are aliases only
