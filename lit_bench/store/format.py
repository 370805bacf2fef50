"""The run-directory format, defined once: every file a run writes, what ``summary.json`` holds, and its version.

A run directory is ``<out_dir>/<sweep>/<algo>[@<backend>]/<env>/[<variant>-<config_id>/]seed_<n>`` (where:
``lit_bench.config.identity``; ``sweep_dir`` reads it back from a path). ``lit_bench.store.rundir`` reads and writes
these files, each atomically (a temporary sibling moved into place with ``os.replace``: a killed run leaves the old or
the new version, never half of one).

Versions (``summary.json``'s ``format``): 1 -- every directory written before the field existed (read as 1); 2 --
adds ``format``; 3 -- a completed run records what it wrote (``evaluations``, ``eval_csv_sha256``: a later change to
``eval.csv`` makes it ``damaged``), and ``versions`` adds numpy and the env family's package. A reader takes any
version up to ``FORMAT`` and refuses a newer one in one line (``format_problem``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

FORMAT = 3  # the run-directory format this version writes and the newest it reads

CONFIG = "config.yaml"
OVERRIDES = "overrides.yaml"
EVAL_CSV = "eval.csv"
EVALUATIONS_NPZ = "evaluations.npz"  # SB3's EvalCallback file name, read by the RL Zoo's plotting scripts
METRICS_CSV = "train/metrics.csv"
HPARAMS = "train/hparams.yaml"  # Lightning's CSVLogger writes it next to metrics.csv (lit backend)
SUMMARY = "summary.json"
VECNORMALIZE = "vecnormalize.pkl"
CHECKPOINTS = "checkpoints"
CHECKPOINT_STATE = "state.json"  # in checkpoints/, written after the checkpoint files: the checkpoint is complete
LAST_FILES = {"lit": "last.ckpt", "sb3": "last.zip"}  # in checkpoints/; the one before: previous.ckpt / previous.zip
BATCHED_CHECKPOINT = "last_seed_state.pt"  # in checkpoints/: a seed of a batched group (lit_bench.run.batched)
SB3_REPLAY_BUFFER = "replay_buffer.pt"  # in checkpoints/: the sb3 backend's replay buffer (filled part, tensors)
SB3_VECNORMALIZE = "vecnormalize.pt"  # in checkpoints/: the sb3 backend's VecNormalize statistics (tensors)
BEST_FILES = {"lit": "best.ckpt", "sb3": "best.zip"}  # in checkpoints/
BEST_VECNORMALIZE = "best_vecnormalize.pkl"  # in checkpoints/
BEST_STATE = "best.json"  # in checkpoints/, written last: {"timesteps", "mean_return"} of the kept best model
VIDEO = "video"
MONITOR = "monitor"  # SB3 Monitor files of the training envs (the RL Zoo's plot scripts read them)
FINAL_VIDEO = "final.mp4"  # the final evaluation's first episode, in <run>/video/
LOCK = ".lock"  # the writer's flock (pid and host inside)
METRICS_BEFORE_RESUME = ".metrics.before_resume.csv"  # a resumed run's earlier metrics, until training ends

# The directories of a run directory that the harness and its loggers write into (train/tb: TensorBoard's default,
# wandb: W&B's). A symlink at any of them (or at the run directory itself) is refused before anything is written.
WRITTEN_DIRS = (CHECKPOINTS, "train", "train/tb", VIDEO, MONITOR, "wandb")

EVAL_FIELDS = (
    "timesteps",
    "wall_time_s",
    "mean_return",
    "std_return",
    "median_return",
    "mean_ep_length",
    "success_rate",
    "fps",
)

# Every file of a run directory a user may read (the table of docs/guides/harness.md lists exactly these;
# test_format checks it).
FILES: dict[str, str] = {
    CONFIG: "the resolved config (plain data)",
    OVERRIDES: "the command line's overrides",
    EVAL_CSV: "one row per evaluation: EVAL_FIELDS",
    EVALUATIONS_NPZ: "SB3 EvalCallback's arrays: timesteps, results (per-episode returns), ep_lengths[, successes]",
    METRICS_CSV: "training metrics, Lightning's CSV schema (step + SB3's metric names), both backends",
    HPARAMS: "lit backend: the algorithm's hyperparameters, as Lightning's CSVLogger writes them",
    SUMMARY: "how the run went: SUMMARY_FIELDS",
    **{f"{CHECKPOINTS}/{name}": "the last checkpoint" for name in LAST_FILES.values()},
    **{f"{CHECKPOINTS}/{name.replace('last', 'previous')}": "the checkpoint before it" for name in LAST_FILES.values()},
    f"{CHECKPOINTS}/{BATCHED_CHECKPOINT}": "a seed trained in a batched group: its last checkpoint (tensors)",
    f"{CHECKPOINTS}/{BATCHED_CHECKPOINT.replace('last', 'previous')}": "a batched seed: the checkpoint before it",
    f"{CHECKPOINTS}/{SB3_REPLAY_BUFFER}": "sb3 backend: the replay buffer of the last checkpoint",
    f"{CHECKPOINTS}/{SB3_VECNORMALIZE}": "sb3 backend: the VecNormalize statistics of the last checkpoint",
    f"{CHECKPOINTS}/{CHECKPOINT_STATE}": "env steps and wall time of the last complete checkpoint",
    **{f"{CHECKPOINTS}/{name}": "the best evaluation's model" for name in BEST_FILES.values()},
    f"{CHECKPOINTS}/{BEST_VECNORMALIZE}": "the VecNormalize statistics the best model was evaluated with",
    f"{CHECKPOINTS}/{BEST_STATE}": "timesteps and mean return of the best evaluation",
    VECNORMALIZE: "VecNormalize statistics in SB3's format (when the env normalizes)",
    f"{VIDEO}/{FINAL_VIDEO}": "the final evaluation's first episode (eval.video=true)",
    f"{VIDEO}/eval_<steps>.mp4": "an evaluation's first episode (eval.video_every=k)",
    f"{MONITOR}/<i>.monitor.csv": "SB3 Monitor's episodes of training env i (r, l, t), both backends",
}

# What summary.json holds. A run writes it when it starts (status running), and again when it ends.
SUMMARY_FIELDS: dict[str, str] = {
    "format": "the run-directory format (FORMAT); absent: 1",
    "status": "running, completed, failed or interrupted (readers add skipped, incomplete, damaged)",
    "algo": "the algo config's name",
    "base": "the algo a variant config derives from (base: <algo>); null: none",
    "env": "the env config's name",
    "env_id": "the gymnasium id",
    "seed": "the seed",
    "backend": "lit or sb3",
    "budget": "env steps asked for",
    "run_dir": "this directory",
    "sweep": "the sweep's name",
    "variant": "readable differences from the composed defaults ('' for none)",
    "config_id": "hash of the config without its seed",
    "config_hash": "hash of the config with its seed",
    "overrides": "key=value of every difference from the composed defaults",
    "invocation": "the multirun this run was last started by (its job record)",
    "resumed_from": "env steps of the checkpoint this run resumed from (null: a fresh start)",
    "started_at": "local time of the start",
    "finished_at": "local time of the end",
    "host": "host name",
    "python": "Python version",
    "versions": "versions of the packages that shape results (format 3 on: numpy and the env family's own package)",
    "git": "commit and dirty flag of the checkout",
    "cluster": "the scheduler job that ran it (SLURM: job id, node, restarts, submitit's stdout / stderr files; Ray: "
    "job, node, task, worker pid, log folder); absent outside a scheduler",
    "timesteps": "env steps trained",
    "final_mean_return": "mean return of the last evaluation, at the budget's end",
    "final_std_return": "its standard deviation",
    "final_success_rate": "its success rate (null without one)",
    "threshold": "the env's solved threshold",
    "steps_to_threshold": "first step from which the threshold held",
    "wall_time_s": "training and evaluation seconds",
    "fps": "env steps per second (wall-clock, training only)",
    "cpu_time_s": "CPU seconds of the training in the run's process (evaluations excluded; a resumed run: since it "
    "resumed)",
    "cpu_fps": "env steps per CPU-second of training: the speed the report compares (another process's load "
    "changes it far less than the wall-clock fps)",
    "cpu_time_note": "a seed trained in a batched group: cpu_time_s and cpu_fps are the group's over its seeds",
    "unbatched_config_id": "a seed trained in a batched group: the config_id of its config trained ungrouped (the "
    "report shows the seed as one of that config's: the same hyperparameters)",
    "unbatched_variant": "a seed trained in a batched group: the variant of its config trained ungrouped",
    "startup_s": "seconds from the start to the first env step",
    "objective": "the score a sweeper gets",
    "evaluations": "a completed run's number of evaluations in eval.csv (format 3 on)",
    "eval_csv_sha256": "the SHA-256 of the eval.csv a completed run wrote (format 3 on)",
    "error": "what went wrong (failed, interrupted)",
    "traceback": "the traceback of an unexpected error",
    "signal": "the signal that stopped an interrupted run",
    "observation": "how the run was watched (loggers, progress bar, videos, log intervals, checkpoint frequency, "
    "console): recorded, never part of its identity",
    "note": "what a skipped run's command asked for that did not train it again (another observation setting)",
}

# The packages whose versions change a run's numbers (summary.json's ``versions``): the report flags a config whose
# runs differ in one of them (pooled in one row, said in the table's footnotes and the figures' legends).
NUMBER_VERSIONS = ("lit_sb3", "stable-baselines3", "sb3-contrib", "torch", "gymnasium", "mujoco", "numpy")

# Files a sweep directory (<out_dir>/<sweep>) holds next to its runs.
BEST_TRIAL = "best_trial.yaml"
SWEEP_CACHE = ".lit_bench_cache.npz"
SWEEP_FILES: dict[str, str] = {
    ".invocations/<id>.jsonl": "one line per job of a multirun: its run's outcome (lit_bench.control.sweep)",
    BEST_TRIAL: "the best trial of a search: objective, directory, differences, config",
    SWEEP_CACHE: "the parsed run files of the sweep (lit_bench.analysis.cache)",
}


def summary_format(summary: dict[str, Any]) -> int:
    """The format a ``summary.json`` was written in (1 for one without the field)."""
    version = summary.get("format", 1)
    return version if isinstance(version, int) and not isinstance(version, bool) else 0


def format_problem(summary: dict[str, Any]) -> str | None:
    """None when this version reads the directory, else one line saying why not (newer or unknown format)."""
    version = summary_format(summary)
    if version > FORMAT:
        return f"run-directory format {version}, newer than this lit_bench reads (1..{FORMAT}): upgrade lit_bench"
    if version < 1:
        return f"format {summary.get('format')!r} is not a run-directory format (1..{FORMAT})"
    return None


# The harness layout of a run directory's path, read back from the path alone (config.identity builds the paths).
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
