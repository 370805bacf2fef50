"""Print the architecture's countable numbers as Markdown tables, for a checkout (this one, or ``--root DIR``).

    python tools/architecture_numbers.py                 # this checkout
    python tools/architecture_numbers.py --root DIR      # another checkout (e.g. a git worktree of an older commit)

- **Algorithms** (SAC, PPO, DQN): the length of the class's MRO and how many of its classes are lit_sb3's; the files
  holding those classes; the lit_sb3 modules the algorithm's own module imports; the files to read (its own file,
  those holding its classes and those it imports: what a reader opens to follow the algorithm one step deep); the
  import closure, counted two ways: *static* (what a reader of the algorithm's module may have to open: its
  module-level imports followed through every module reached, not those under ``if TYPE_CHECKING`` or inside
  functions; a package's ``__init__`` is followed only for the names taken from it, to the module that defines
  each: the same rule for SB3's own module of the algorithm) and *loaded* (the lit_sb3 modules in ``sys.modules``
  after ``from lit_sb3 import X`` in a fresh interpreter, package ``__init__`` files included).
- **Modules**: per package of ``lit_bench`` and ``lit_sb3``, its modules (``__init__.py`` apart), their lines,
  how many are under 80 lines, and the smallest ones.

The class facts are read by importing the checkout's own ``lit_sb3`` in a child interpreter (its directory first on
``sys.path``), so an older checkout is measured with its own code.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ALGORITHMS = {"SAC": "sac", "PPO": "ppo", "DQN": "dqn"}  # class: its package (and module) in lit_sb3 and in SB3
SMALL = 80  # lines: a module under this is listed as small

# Run in the checkout (its directory first on sys.path): one algorithm's class facts and loaded modules, as JSON.
_PROBE = """
import json, sys, inspect
before = set(sys.modules)
import lit_sb3
cls = getattr(lit_sb3, sys.argv[1])
ours = [c for c in cls.__mro__ if c.__module__.split(".")[0] == "lit_sb3"]
loaded = sorted(m for m in set(sys.modules) - before if m.split(".")[0] == "lit_sb3")
files = {m: getattr(sys.modules[m], "__file__", None) for m in loaded}
print(json.dumps({
    "mro": len(cls.__mro__),
    "ours": len(ours),
    "class_files": sorted({inspect.getsourcefile(c) for c in ours}),
    "loaded": files,
}))
"""


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(tree: ast.Module, package: str) -> Iterator[tuple[str, list[str]]]:
    """(module, names) of each import run when the module is imported: not in functions, not under TYPE_CHECKING."""

    def walk(body: list[ast.stmt]) -> Iterator[tuple[str, list[str]]]:
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield alias.name, []
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                yield base, [alias.name for alias in node.names]
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    yield from walk(node.body)
                yield from walk(node.orelse)
            elif isinstance(node, ast.Try):
                for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    yield from walk(block)
            elif isinstance(node, ast.With):
                yield from walk(node.body)

    yield from walk(tree.body)


def static_closure(start: str, top: str, root: str) -> dict[str, Path]:
    """The modules of package ``top`` (found under ``root``) that reading module ``start`` needs, with their files:
    every module-level import followed (not under ``if TYPE_CHECKING``, not inside functions); a package's
    ``__init__`` is followed only for the names taken from it (to the module that defines each), and is counted
    where it defines one of them, or is imported whole."""

    def find(name: str) -> Path | None:
        relative = Path(root, *name.split("."))
        for candidate in (relative.with_suffix(".py"), relative / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    found: dict[str, Path] = {}
    whole: set[str] = set()
    seen: set[tuple[str, str | None]] = set()

    def read(name: str, path: Path) -> None:  # a module read whole: counted, its imports followed
        if name in whole:
            return
        whole.add(name)
        found[name] = path
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for module, names in _module_level_imports(ast.parse(path.read_text(encoding="utf-8")), package):
            if not names:
                visit(module, None)
            for taken in names:
                visit(module, taken)

    def visit(module: str, taken: str | None) -> None:
        if module.split(".")[0] != top or (module, taken) in seen:
            return
        seen.add((module, taken))
        path = find(module)
        if path is None:
            return
        if path.name != "__init__.py":
            read(module, path)
        elif taken is None:
            found.setdefault(module, path)  # ``import package``: its face, not all it can hand on
        elif find(f"{module}.{taken}") is not None:
            visit(f"{module}.{taken}", None)
        else:  # a name the face imports from a module (follow it there), or defines (read the face)
            for source, names in _module_level_imports(ast.parse(path.read_text(encoding="utf-8")), module):
                if taken in names and source != module:
                    visit(source, taken)
                    return
            read(module, path)

    visit(start, None)
    return found


def _installed_root(top: str) -> str:
    spec = importlib.util.find_spec(top)
    assert spec is not None and spec.origin is not None, f"{top} is not installed"
    return str(Path(spec.origin).parent.parent)


def algorithm_rows(root: Path) -> list[str]:
    rows = [
        "| algorithm | MRO: classes (lit_sb3's) | files holding its classes | lit_sb3 modules its module imports "
        "| files to read | static closure: ours (lines) | SB3's own module's static closure (lines) "
        "| loaded by `from lit_sb3 import` (lines) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, package in ALGORITHMS.items():
        probe = subprocess.run(
            [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r}); exec({_PROBE!r})", name],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        facts = json.loads(probe.stdout)
        own = f"lit_sb3.algorithms.{package}.{package}"
        own_file = root / "lit_sb3" / "algorithms" / package / f"{package}.py"
        imported = {
            m
            for m, names in _module_level_imports(ast.parse(own_file.read_text(encoding="utf-8")), own)
            for m in [m, *(f"{m}.{n}" for n in names)]
            if m.split(".")[0] == "lit_sb3" and (root / Path(*m.split("."))).with_suffix(".py").is_file() and m != own
        }
        to_read = {str(own_file.resolve())} | {str(Path(f).resolve()) for f in facts["class_files"]}
        to_read |= {str((root / Path(*m.split("."))).with_suffix(".py").resolve()) for m in imported}
        ours = static_closure(own, "lit_sb3", str(root))
        sb3 = static_closure(
            f"stable_baselines3.{package}.{package}", "stable_baselines3", _installed_root("stable_baselines3")
        )
        loaded = [Path(f) for f in facts["loaded"].values() if f]
        rows.append(
            f"| {name} | {facts['mro']} ({facts['ours']}) | {len(facts['class_files'])} | {len(imported)} "
            f"| {len(to_read)} "
            f"| {len(ours)} ({sum(map(lines, ours.values())):,}) | {len(sb3)} ({sum(map(lines, sb3.values())):,}) "
            f"| {len(loaded)} ({sum(map(lines, loaded)):,}) |"
        )
    return rows


def module_rows(root: Path, top: str) -> list[str]:
    packages: dict[str, list[tuple[int, str]]] = {}
    for path in sorted((root / top).rglob("*.py")):
        if path.name == "__init__.py":
            continue
        relative = path.relative_to(root)
        package = str(relative.parent) if relative.parent != Path(top) else top
        packages.setdefault(package, []).append((lines(path), str(relative)))
    every = [entry for entries in packages.values() for entry in entries]
    rows = [
        f"| {top} package | modules | lines | under {SMALL} lines | smallest |",
        "|---|---:|---:|---:|---|",
    ]
    for package, entries in sorted(packages.items(), key=lambda item: -len(item[1])):
        small = sorted(entry for entry in entries if entry[0] < SMALL)
        shown = ", ".join(f"{Path(p).name} {n}" for n, p in small) or "-"
        rows.append(f"| {package}/ | {len(entries)} | {sum(n for n, _ in entries):,} | {len(small)} | {shown} |")
    small_all = sum(1 for n, _ in every if n < SMALL)
    rows.append(f"| **all** | {len(every)} | {sum(n for n, _ in every):,} | {small_all} | |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="a checkout")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    print("\n".join(algorithm_rows(root)))
    for top in ("lit_bench", "lit_sb3"):
        print()
        print("\n".join(module_rows(root, top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
