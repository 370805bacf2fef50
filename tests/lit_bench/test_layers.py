"""The import rule of lit_bench's layers, read from the source (every import, also those inside functions).

Bottom up: store (the run directory) <- config (what a run is) <- control (sweeps, signals, processes) <- run (one
run) <- cli (the tools). analysis reads the store and uses config's run identity; nothing but cli imports cli, and the
run side never imports analysis. lit_sb3 never imports lit_bench. No two lit_bench modules import each other in a loop
(imports inside functions count: a loop there is a loop a reader follows). A name is imported from the module that
defines it (lit_bench and lit_sb3). Only the store's format spells a run file's name.
"""

import ast
import graphlib
from pathlib import Path

import pytest

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
    return _imported(path.read_text(), ".".join(path.relative_to(REPO).parent.parts))


def _imported(source: str, package: str) -> set[str]:
    """The lit_bench modules and names ``source`` imports; relative imports resolved against ``package``, the package
    of the importing module (``from ..run import train`` in ``lit_bench.analysis``: ``lit_bench.run.train``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".") if package else []
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found |= {f"{module}.{alias.name}" for alias in node.names} | {module}
    return {name for name in found if name.split(".")[0] == "lit_bench"}


def test_relative_imports_are_read_as_the_modules_they_name():
    assert "lit_bench.run.train" in _imported("from ..run import train", "lit_bench.analysis")
    assert "lit_bench.analysis.plot" in _imported("from .plot import new_axes", "lit_bench.analysis")
    assert "lit_bench.cli.report" in _imported("from .. import report", "lit_bench.cli.reporting")


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_module_imports_only_the_layers_below_it(path: Path):
    layer = _layer(path)
    for name in _imports(path):
        parts = name.split(".")
        target = parts[1] if len(parts) > 1 else ""
        if target not in ALLOWED or target == layer:
            continue  # the package root, or the module's own layer
        if (
            layer == ""
        ):  # lit_bench/__init__.py (the Hydra resolvers), noise.py and wrappers.py (named by configs), stats.py
            assert target in {"config", "store"}, f"{path.relative_to(REPO)} imports {name}"
            continue
        assert target in ALLOWED[layer], f"{path.relative_to(REPO)} ({layer}) imports {name} ({target})"


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Each module (name: its source) and the modules of ``sources`` it imports anywhere in its file; an imported
    name counts as its module (``lit_bench.run.train.run``: ``lit_bench.run.train``), the package root not at all
    (``lit_bench/__init__.py`` only registers the resolvers)."""
    graph = {}
    for module, source in sources.items():
        package = module if module.count(".") < 1 else module.rpartition(".")[0]
        imported = set()
        for name in _imported(source, package):
            while name and name not in sources:
                name = name.rpartition(".")[0]
            imported.add(name)
        graph[module] = imported - {module, "lit_bench", ""}
    return graph


def import_loop(graph: dict[str, set[str]]) -> list[str] | None:
    """One loop of modules that import each other (None: there is none)."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return None


def test_no_import_loops_in_lit_bench():
    loop = import_loop(import_graph({_module(path): path.read_text() for path in MODULES}))
    assert loop is None, "lit_bench modules importing each other in a loop: " + " -> ".join(loop or [])


def test_the_loop_finder_finds_a_loop_through_an_import_in_a_function():
    sources = {
        "lit_bench.run.a": "from lit_bench.run.b import x\n",
        "lit_bench.run.b": "def f():\n    from lit_bench.run.c import y\n",
        "lit_bench.run.c": "from lit_bench.run import a\n",
        "lit_bench.run.d": "from lit_bench.run.a import x\n",
    }
    assert sorted(set(import_loop(import_graph(sources)) or [])) == [
        "lit_bench.run.a",
        "lit_bench.run.b",
        "lit_bench.run.c",
    ]
    assert import_loop(import_graph({**sources, "lit_bench.run.c": "import lit_bench\n"})) is None


# modules that hand names on by design: lit_sb3.safe_load is the allow-list's public face (docs/guides/trust.md)
FACES = {"lit_sb3.safe_load"}
OURS = {_module(path): path for top in ("lit_bench", "lit_sb3") for path in sorted((REPO / top).rglob("*.py"))}


def _defined(source: str) -> set[str]:
    """The names a module binds at its top level itself (functions, classes, assignments), not by importing them."""
    names = set()
    for node in ast.parse(source).body:
        for inner in [node, *(ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [])]:
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(inner.name)
            elif isinstance(inner, (ast.Assign, ast.AnnAssign)):
                targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def imported_through(sources: dict[str, str]) -> list[str]:
    """``module: name <- other`` for each name a module imports from another of ``sources`` that does not define it
    (a package's ``__init__`` and the ``FACES`` hand names on by design; a submodule is imported from its package)."""
    defined = {module: _defined(source) for module, source in sources.items()}
    found = []
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            other = node.module if isinstance(node, ast.ImportFrom) and node.level == 0 else None
            if other not in sources or other in FACES or f"{other}.__init__" in sources:
                continue
            for alias in node.names:
                if alias.name not in defined[other] and f"{other}.{alias.name}" not in sources:
                    found.append(f"{module}: {alias.name} <- {other}")
    return found


def test_a_name_is_imported_from_the_module_that_defines_it():
    sources = {module: path.read_text() for module, path in OURS.items()}
    sources |= {f"{m}.__init__": "" for m, path in OURS.items() if path.name == "__init__.py"}  # (packages, marked)
    found = imported_through(sources)
    assert not found, "names imported through a module that only imported them:\n" + "\n".join(found)


def test_the_through_import_finder_finds_one():
    sources = {
        "lit_bench.store.format": "EVAL_CSV = 'x'\n",
        "lit_bench.store.rundir": "from lit_bench.store.format import EVAL_CSV\nclass RunDir: ...\n",
        "lit_bench.run.video": "from lit_bench.store.rundir import EVAL_CSV, RunDir\n",
    }
    assert imported_through(sources) == ["lit_bench.run.video: EVAL_CSV <- lit_bench.store.rundir"]


def test_lit_bench_installs_no_import_hooks():
    # old module names are not aliased: a run directory written with them is migrated (lit-bench migrate)
    for path in MODULES:
        assert "meta_path" not in path.read_text(), f"{path.relative_to(REPO)} changes the import system"


FORMAT = PACKAGE / "store" / "format.py"


def _format_file_names() -> set[str]:
    """The file names lit_bench.store.format spells (its string constants naming a file: they hold a dot), with the
    last part of each path (``train/metrics.csv``: ``metrics.csv``)."""
    names = set()
    for node in ast.parse(FORMAT.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for leaf in ast.walk(node.value):
                text = leaf.value if isinstance(leaf, ast.Constant) else None
                if isinstance(text, str) and "." in text and not set(" <:") & set(text) and "lit_" not in text:
                    names |= {text, text.rsplit("/", 1)[-1]}
    return names


def test_the_format_names_the_run_files():
    assert {"eval.csv", "summary.json", "config.yaml", "metrics.csv", "best_trial.yaml"} <= _format_file_names()


@pytest.mark.parametrize("path", [p for p in MODULES if p != FORMAT], ids=lambda p: str(p.relative_to(REPO)))
def test_only_the_store_format_spells_a_run_file_name(path: Path):
    names = _format_file_names()
    for node in ast.walk(ast.parse(path.read_text())):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str):
            spelled = [n for n in names if text == n or text.endswith(f"/{n}")]  # (prose may name them)
            assert not spelled, (
                f"{path.relative_to(REPO)}:{node.lineno} spells {spelled[0]}: name it from store/format.py"
            )


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
