"""The harness layout of a run directory's path, read back from the path alone:
``<out_dir>/<sweep>/<algo>[@sb3]/<env>/[<variant>-<config_id>/]seed_<n>`` (``lit_bench.config.identity`` builds
these paths from a config)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

ID_CHARS = 10  # hex characters of a config_id
VARIANT_DIR = re.compile(rf"-[0-9a-f]{{{ID_CHARS}}}$")  # how a variant's directory name ends: -<config_id>


def sweep_dir(run_dir: Path) -> Path | None:
    """``<out_dir>/<sweep>`` of a run in the harness layout (``lit_bench.config.identity``); None for any other path."""
    return _sweep_of(run_dir.parent) if run_dir.name.startswith("seed_") else None


@lru_cache(maxsize=4096)
def _sweep_of(parent: Path) -> Path | None:
    """``sweep_dir`` of the runs in ``parent`` (the seeds of one config share it: worked out once)."""
    parts = (*parent.parts, "seed_")
    end = len(parts) - 1
    if end and VARIANT_DIR.search(parts[end - 1]):
        end -= 1
    if end < 3:
        return None
    root = Path(*parts[: end - 2])
    return None if root == Path(root.anchor) else root
