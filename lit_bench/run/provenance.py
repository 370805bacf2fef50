"""Where and with what a run ran: host, Python, package versions, git commit, the command's overrides."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from importlib.metadata import requires as requirements
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from lit_bench.config.resources import source_checkout

SHAPING = ("stable-baselines3", "sb3-contrib", "torch", "lightning", "gymnasium", "mujoco", "numpy", "hydra-core")


def versions(env: dict[str, Any] | None = None) -> dict[str, str | None]:
    """lit_sb3's version and those of the packages that shape a run's numbers (``SHAPING``), plus the env family's
    own packages (``env``: the run's env config; its ``extra`` names them, e.g. ale-py, box2d, minigrid, pybullet)."""
    import lit_sb3

    found: dict[str, str | None] = {"lit_sb3": lit_sb3.__version__}
    for dist in (*SHAPING, *family_packages((env or {}).get("extra"))):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = None
    return found


def family_packages(extra: str | None) -> list[str]:
    """The distributions lit-sb3's ``extra`` installs (an env family's: ``atari`` -> ale-py, opencv-python-headless)."""
    if not extra:
        return []
    from packaging.requirements import Requirement

    try:
        requires = requirements("lit-sb3") or []
    except PackageNotFoundError:
        return []
    found = []
    for text in requires:
        requirement = Requirement(text)
        marker = requirement.marker
        of_extra = marker is not None and marker.evaluate({"extra": extra}) and not marker.evaluate({"extra": ""})
        if of_extra and requirement.name != "lit-sb3":  # (an extra of extras, `envs`, names lit-sb3 itself)
            found.append(requirement.name)
    return found


def git_state() -> dict[str, Any]:
    """The commit of the clone lit_bench runs from (None from an installed wheel: its version says it)."""
    checkout = source_checkout()
    if checkout is None:
        return {"commit": None, "dirty": None}

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True, timeout=10).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain", "-uno"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def provenance(env: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary's fields written when a run starts (``env``: the run's env config; ``cluster`` only for a job of a
    scheduler)."""
    found = {
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "versions": versions(env),
        "git": git_state(),
    }
    job = scheduler_job()
    return {**found, "cluster": job} if job else found


def scheduler_job() -> dict[str, Any] | None:
    """Which scheduler job runs this process, and where its logs are: a SLURM job (submitit's stdout / stderr
    files, how often SLURM restarted it) or a Ray task (its job, node and the node's log folder)."""
    if "SLURM_JOB_ID" in os.environ and "SUBMITIT_EXECUTOR" in os.environ:
        import submitit

        job = submitit.JobEnvironment()
        return {
            "scheduler": "slurm",
            "job_id": job.job_id,
            "node": job.hostname,
            "restarts": int(os.environ.get("SLURM_RESTART_COUNT", 0)),
            "pid": os.getpid(),
            "stdout": str(job.paths.stdout),
            "stderr": str(job.paths.stderr),
        }
    if "SLURM_JOB_ID" in os.environ:  # a job of sbatch / srun that is not submitit's
        return {
            "scheduler": "slurm",
            "job_id": os.environ["SLURM_JOB_ID"],
            "restarts": int(os.environ.get("SLURM_RESTART_COUNT", 0)),
        }
    if "ray" in sys.modules:
        import ray

        if ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE:
            context = ray.get_runtime_context()
            return {
                "scheduler": "ray",
                "job_id": context.get_job_id(),
                "node": context.get_node_id(),
                "task_id": context.get_task_id(),
                "pid": os.getpid(),
                "logs": _ray_log_dir(),
            }
    return None


def _ray_log_dir() -> str | None:
    from ray._private.worker import global_worker

    node = getattr(global_worker, "node", None)
    return getattr(node, "get_logs_dir_path", lambda: None)()


def requeued_by_scheduler(signal_name: str) -> bool:
    """Whether an interrupting signal is submitit's SIGUSR2 (a time limit or a preemption): the job is requeued."""
    return signal_name == "SIGUSR2" and "SUBMITIT_EXECUTOR" in os.environ


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
        hydra_cfg = cast(DictConfig, HydraConfig.get())  # typed as the HydraConf dataclass: a DictConfig at run time
        output_dir = OmegaConf.select(hydra_cfg, "runtime.output_dir", default=None)
    except ValueError:  # not inside a Hydra app
        return None
    return Path(output_dir).resolve() if output_dir else None  # None: a composed config (tests) has none
