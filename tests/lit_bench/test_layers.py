"""The import rule of lit_bench's layers, read from the source (every import, also those inside functions).

Bottom up: store (the run directory) <- config (what a run is) <- control (sweeps, signals, processes) <- run (one
run) <- cli (the tools). analysis reads the store and uses config's run identity; nothing but cli imports cli, and the
run side never imports analysis. lit_sb3 never imports lit_bench.
"""

import ast
from pathlib import Path

import pytest

from lit_bench import TOOLS
from lit_bench.store.format import MOVED
from tests.lit_bench.helpers import REPO

ALLOWED = {
    "store": set(),
    "config": {"store"},
    "control": {"store", "config"},
    "run": {"store", "config", "control"},
    "analysis": {"store", "config"},
    "cli": {"store", "config", "control", "run", "analysis"},
}
PACKAGE = REPO / "lit_bench"


def _layer(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0] if len(path.relative_to(PACKAGE).parts) > 1 else ""


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
    return {name for name in found if name.split(".")[0] == "lit_bench"}


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_module_imports_only_the_layers_below_it(path: Path):
    layer = _layer(path)
    for name in _imports(path):
        parts = name.split(".")
        target = parts[1] if len(parts) > 1 else ""
        if target not in ALLOWED or target == layer:
            continue  # the package root, or the module's own layer
        if layer == "":  # lit_bench/__init__.py: the Hydra resolvers and the alias table
            assert target in {"config", "store"}, f"lit_bench/__init__.py imports {name}"
            continue
        assert target in ALLOWED[layer], f"{path.relative_to(REPO)} ({layer}) imports {name} ({target})"


def test_no_code_imports_a_module_by_its_name_before_the_move():
    # (the old names stay importable for old run directories and the documented commands; test_moves.py checks that)
    old = set(MOVED) | {f"lit_bench.{tool}" for tool in TOOLS}
    sources = [*REPO.glob("lit_*/**/*.py"), *REPO.glob("tests/**/*.py"), *REPO.glob("benchmarks/*.py"), REPO / "run.py"]
    for path in sources:
        if path.name == "test_moves.py":
            continue
        stale = {n for n in _imports(path) if n in old or n.rsplit(".", 1)[0] in old}
        assert not stale, f"{path.relative_to(REPO)} imports {sorted(stale)}: use the new paths (store.format.MOVED)"


def test_lit_sb3_never_imports_lit_bench():
    for path in (REPO / "lit_sb3").rglob("*.py"):
        assert not _imports(path), f"{path.relative_to(REPO)} imports lit_bench"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_says_its_one_job(layer: str):
    init = PACKAGE / layer / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc, f"{init.relative_to(REPO)} has no docstring"
    for path in (PACKAGE / layer).rglob("*.py"):  # (a layer's subpackages too: cli/reporting)
        assert ast.get_docstring(ast.parse(path.read_text())), f"{path.relative_to(REPO)} has no docstring"
