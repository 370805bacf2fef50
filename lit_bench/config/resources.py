"""Where the harness's own files are: its config groups and SB3's reference data, from a wheel or from a clone.

The repository keeps them at its top (``conf/``, ``results/reference/``, ``results/baselines/``): that is where they are
edited and reviewed. A wheel carries copies inside the package (``lit_bench/conf/``, ``lit_bench/data/reference/``,
``lit_bench/data/baselines/``), made at build time by ``setup.py``; a clone or an editable install has none there and
reads the repository's. One lookup, here, serves both.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

# packaged location (in the wheel) -> the repository's source folder (in a clone)
SHIPPED = {"conf": "conf", "data/reference": "results/reference", "data/baselines": "results/baselines"}


def _package() -> Path:
    return Path(str(files("lit_bench")))


def _located(packaged: str) -> Path:
    inside = _package() / packaged
    return inside if inside.is_dir() else _package().parent / SHIPPED[packaged]


def conf_dir() -> Path:
    """The built-in config groups (``algo/``, ``env/``, ``algo_env/``, ``suite/``, ...) and ``config.yaml``."""
    return _located("conf")


def reference_dir() -> Path:
    """SB3 / RL Zoo reference scores and curves."""
    return _located("data/reference")


def baselines_dir() -> Path:
    """The committed regression thresholds (``lit-bench regress``)."""
    return _located("data/baselines")


def source_checkout() -> Path | None:
    """The repository this lit_bench runs from (a clone or an editable install); None for an installed wheel."""
    root = _package().parent
    return root if not (_package() / "conf").is_dir() and (root / "pyproject.toml").is_file() else None
