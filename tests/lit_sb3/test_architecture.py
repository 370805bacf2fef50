"""lit_sb3's architecture rules (issue 38): no metaclass on the algorithms, no import loops between lit_sb3's modules
(``TYPE_CHECKING`` imports count: a loop there is a loop a reader follows), a base class without mixins and no class
with two bases of lit_sb3's own.
The rule that Lightning's private names stay behind ``lit_sb3/lightning_compat`` is in ``test_lightning_door.py``."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import lightning as L
import pytest

import lit_sb3
from lit_sb3.common.base import BaseAlgorithm

ROOT = Path(lit_sb3.__file__).resolve().parent


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each lit_sb3 module under ``root`` and the lit_sb3 modules it imports anywhere in its file (functions and
    ``if TYPE_CHECKING:`` blocks included)."""
    modules = {_module_name(path, root): path for path in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("lit_sb3"):
                module = node.module or ""
                imported |= {f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names if a.name.startswith("lit_sb3")}
        graph[name] = {m for m in imported if m in modules and m != name}
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other in a loop, one sorted list per loop (strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    return loops


def test_no_import_loops_in_lit_sb3():
    loops = import_loops(import_graph(ROOT))
    assert not loops, "lit_sb3 modules importing each other in a loop:\n" + "\n".join(map(" <-> ".join, loops))


def test_the_loop_finder_finds_a_loop(tmp_path):
    package = tmp_path / "lit_sb3"
    package.mkdir()
    (package / "a.py").write_text("from lit_sb3.b import x\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lit_sb3.a import y\n")
    assert import_loops(import_graph(package)) == [["lit_sb3.a", "lit_sb3.b"]]


@pytest.mark.parametrize("name", sorted(lit_sb3._ALGORITHMS))
def test_algorithms_have_no_metaclass(name):
    cls = getattr(lit_sb3, name)
    assert type(cls) is type(L.LightningModule), f"{name}'s metaclass is {type(cls).__name__}"


def test_no_class_in_lit_sb3_declares_a_metaclass_or_is_one():
    found = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                if any(k.arg == "metaclass" for k in node.keywords):
                    found.append(f"{path.relative_to(ROOT)}: class {node.name}(metaclass=...)")
                if any(isinstance(b, ast.Name) and b.id == "type" for b in node.bases):
                    found.append(f"{path.relative_to(ROOT)}: class {node.name}(type)")
    assert not found, "\n".join(found)


def test_the_base_class_is_a_lightning_module_without_mixins():
    assert BaseAlgorithm.__bases__ == (L.LightningModule,)
    for name, package in lit_sb3._ALGORITHMS.items():
        module = importlib.import_module(f"lit_sb3.algorithms.{package}")
        ours = [c for c in getattr(module, name).__mro__ if c.__module__.startswith("lit_sb3")]
        assert len(ours) <= 4, f"{name}: {[c.__name__ for c in ours]}"


def _own_classes() -> list[type]:
    """Every class defined in a lit_sb3 module (each module imported)."""
    found = []
    for info in pkgutil.walk_packages(lit_sb3.__path__, "lit_sb3."):
        module = importlib.import_module(info.name)
        found += [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == module.__name__]
    return found


def test_no_class_of_lit_sb3_mixes_in_another_of_its_classes():
    # a part of an algorithm is an object it holds, or the one class it extends: never a second base of ours (a mixin
    # reads and sets the algorithm's private attributes from another file)
    mixed = [
        f"{c.__module__}.{c.__qualname__}{tuple(b.__name__ for b in c.__bases__)}"
        for c in _own_classes()
        if sum(b.__module__.split(".")[0] == "lit_sb3" for b in c.__bases__) > 1
    ]
    assert not mixed, "classes with more than one base of lit_sb3's:\n" + "\n".join(mixed)
