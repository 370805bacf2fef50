"""Lightning behind one door: outside lit_sb3/lightning_compat, no module of lit_sb3, lit_bench or the Hydra plugins
imports or reads a private Lightning name."""

import ast
import re
from pathlib import Path

import lightning
import torch

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "lit_sb3"
DOOR = ROOT / "lightning_compat"
_DEFINED = re.compile(r"(?:def |class |self\.)(_[a-z]\w*)\b")


def _private_names(files: list[Path]) -> set[str]:
    return {
        name
        for path in files
        for name in _DEFINED.findall(path.read_text(errors="ignore"))
        if not name.startswith("__")
    }


LIGHTNING_PRIVATE = _private_names(list(Path(lightning.__file__).parent.rglob("*.py")))
OUTSIDE = [
    *(p for p in ROOT.rglob("*.py") if DOOR not in p.parents),
    *(REPO / "lit_bench").rglob("*.py"),
    *(REPO / "hydra_plugins").rglob("*.py"),
]
# our own private names and torch.nn.Module's (some share a name with one of Lightning's)
OURS = _private_names(OUTSIDE) | _private_names([Path(torch.__file__).parent / "nn" / "modules" / "module.py"])


def test_lightning_private_names_are_used_only_in_the_compat_package():
    found = []
    for path in OUTSIDE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "lightning":
                found += [
                    f"{path.name}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") or "._" in f".{node.module}"
                ]
            elif isinstance(node, ast.Attribute) and node.attr in LIGHTNING_PRIVATE - OURS:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: .{node.attr}")
    assert not found, "private Lightning names outside lit_sb3/lightning_compat:\n" + "\n".join(found)


def test_the_door_documents_each_patch():
    init = ast.parse((DOOR / "__init__.py").read_text())
    doc = ast.get_docstring(init)
    exported = next(n for n in init.body if isinstance(n, ast.Assign) and n.targets[0].id == "__all__")
    for name in ast.literal_eval(exported.value):
        assert f"{name}``" in doc, f"{name} is not in lit_sb3.lightning_compat's list of patches"
    for path in DOOR.glob("*.py"):
        module = ast.parse(path.read_text())
        assert ast.get_docstring(module), path.name
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                assert ast.get_docstring(node), f"{path.name}: {node.name} has no docstring"


LIGHTNING_PACKAGES = ("lightning", "pytorch_lightning", "lightning_fabric")


def private_lightning_imports(files: list[Path]) -> list[str]:
    """Imports of a private Lightning module or name (``lightning.x._y``, ``from lightning.x import _y``) and any
    import of the ``pytorch_lightning`` / ``lightning_fabric`` distributions' internals, in ``files``."""
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                module = node.module or ""
                if module.split(".")[0] not in LIGHTNING_PACKAGES:
                    continue
                names = [a.name for a in node.names]
                private = "._" in f".{module}" or any(name.startswith("_") for name in names)
                if private or module.split(".")[0] != "lightning":
                    found.append(f"{path.name}:{node.lineno}: from {module} import {', '.join(names)}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    if top in LIGHTNING_PACKAGES and ("._" in f".{alias.name}" or top != "lightning"):
                        found.append(f"{path.name}:{node.lineno}: import {alias.name}")
    return found


def test_no_private_lightning_module_is_imported_outside_the_door():
    found = private_lightning_imports(OUTSIDE)
    assert not found, "private Lightning imports outside lit_sb3/lightning_compat:\n" + "\n".join(found)


def test_the_import_check_catches_each_form(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import lightning.pytorch.loops._x\nfrom lightning.pytorch.loops import _FitLoop\n"
        "from pytorch_lightning.loops import FitLoop\nimport lightning_fabric.utilities\n"
        "from lightning.pytorch import Trainer\n"
    )
    assert len(private_lightning_imports([bad])) == 4
