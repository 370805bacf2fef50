"""Where and with what a run ran: host, Python, package versions, git commit, the command's overrides."""

from __future__ import annotations

import platform
import socket
import subprocess
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

_REPO = Path(__file__).resolve().parents[2]


def versions() -> dict[str, str | None]:
    import lit_sb3

    found: dict[str, str | None] = {"lit_sb3": lit_sb3.__version__}
    for dist in ("stable-baselines3", "sb3-contrib", "torch", "lightning", "gymnasium", "mujoco", "hydra-core"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = None
    return found


def git_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=_REPO, capture_output=True, text=True, timeout=10).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain", "-uno"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def provenance() -> dict[str, Any]:
    """The summary's fields written when a run starts."""
    return {"started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": socket.gethostname(),
            "python": platform.python_version(), "versions": versions(), "git": git_state()}


def task_overrides() -> list[str]:
    """The command line's overrides of this job (empty outside a Hydra app, e.g. tests calling ``run()``)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except ValueError:  # not inside a Hydra app
        return []


def hydra_output_dir() -> Path | None:
    """The directory Hydra made for this job (None outside run.py)."""
    from hydra.core.hydra_config import HydraConfig

    try:
        output_dir = OmegaConf.select(HydraConfig.get(), "runtime.output_dir", default=None)
    except ValueError:  # not inside a Hydra app
        return None
    return Path(output_dir).resolve() if output_dir else None  # None: a composed config (tests) has none
