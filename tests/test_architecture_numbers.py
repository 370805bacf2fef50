"""tools/architecture_numbers.py counts what a reader opens: a package's ``__init__`` only for the names taken from
it, no import under ``TYPE_CHECKING`` or inside a function; modules per package with the small ones named."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "architecture_numbers.py"


@pytest.fixture
def numbers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("architecture_numbers", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_static_closure_follows_a_face_only_for_the_names_taken(numbers: ModuleType, tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.everything import a_lot\n",
            "pkg/algo.py": (
                "from typing import TYPE_CHECKING\nfrom pkg.common import Base, tools\n"
                "from pkg.common.losses import l2\n"
                "if TYPE_CHECKING:\n    from pkg.typing_only import T\n"
                "def later():\n    from pkg.lazy import x\n"
            ),
            "pkg/common/__init__.py": "from pkg.common.base import Base\nfrom pkg.common.unused import U\n",
            "pkg/common/base.py": "import pkg\n",
            "pkg/common/tools.py": "",
            "pkg/common/losses.py": "",
            "pkg/common/unused.py": "",
            "pkg/everything.py": "",
            "pkg/typing_only.py": "",
            "pkg/lazy.py": "",
        },
    )
    found = numbers.static_closure("pkg.algo", "pkg", str(tmp_path))
    assert sorted(found) == ["pkg", "pkg.algo", "pkg.common.base", "pkg.common.losses", "pkg.common.tools"]


def test_modules_per_package_name_the_small_ones(numbers: ModuleType, tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "lit_bench/__init__.py": "",
            "lit_bench/run/__init__.py": "",
            "lit_bench/run/small.py": "x = 1\n",
            "lit_bench/run/large.py": "x = 1\n" * 100,
            "lit_bench/stats.py": "x = 1\n" * 90,
        },
    )
    rows = numbers.module_rows(tmp_path, "lit_bench")
    assert "| lit_bench/run/ | 2 | 101 | 1 | small.py 1 |" in rows
    assert "| lit_bench/ | 1 | 90 | 0 | - |" in rows
    assert rows[-1] == "| **all** | 3 | 191 | 1 | |"
