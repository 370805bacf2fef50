"""How a run begins in its directory: skipped (completed or pruned with this config), resumed from its
checkpoint, or started afresh (``decide``); the directory made ready for it (``open_run_dir``), and what a skipped run
says about the observation settings it was not trained again for."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from lit_bench.config.identity import observation
from lit_bench.run.checkpointing import resume_point
from lit_bench.run.provenance import task_overrides
from lit_bench.store.rundir import RunDir, atomic_write_text


@dataclass(frozen=True)
class Start:
    """How a run begins in its directory: ``skip`` (completed or pruned with this config), ``resume`` (from the
    checkpoint at ``step``), ``fresh`` (nothing usable there; with ``force``, ``damage`` says what was wrong with the
    run found there) or ``damaged`` (a completed run whose files do not match its record: left for the user)."""

    action: Literal["skip", "resume", "fresh", "damaged"]
    step: int | None = None
    damage: str | None = None


def decide(
    run_dir: RunDir,
    previous: dict[str, Any] | None,
    held: dict[str, Any] | None,
    *,
    backend: str,
    budget: int | None,
    force: bool,
    batched: bool = False,
) -> Start:
    """Skip, resume or start afresh, from what the directory holds (``previous``: its summary, ``held``: its config,
    already known to be this run's; ``budget`` None: only whether to skip is known, never ``resume``; ``batched``: a
    seed of a batched group, resumed from its own checkpoint file)."""
    damage = run_dir.damage(previous) if held is not None else None  # no config: a new run anyway
    if damage:  # finished work is never trained over unasked: force=true does
        return Start("fresh" if force else "damaged", damage=damage)
    pruned = previous is not None and previous["status"] == "pruned"
    if held is None or (force and not pruned):
        return Start("fresh")
    if previous is None:  # its summary was lost (e.g. a full disk): what its checkpoint holds is still its own
        step = resume_point(run_dir, backend, batched) if budget is not None else None
        return Start("resume", step) if step is not None else Start("fresh")
    if previous["status"] == "completed" or (pruned and not force):
        return Start("skip")  # force=true continues a pruned run from its checkpoint
    step = resume_point(run_dir, backend, batched) if budget is not None else None  # at the budget: killed in the final
    return Start("resume", step) if step is not None else Start("fresh")  # evaluation, which alone is redone


def left_damaged(run_dir: RunDir, damage: str) -> str:
    """The one line of a completed run whose files do not match what it recorded."""
    return (
        f"{run_dir.root}: damaged: {damage}; left as it is (nothing was changed): "
        f"restore or move it, or force=true to train it again"
    )


def not_retrained(held: dict[str, Any], config: dict[str, Any], run_dir: RunDir) -> str | None:
    """What a skipped run does instead of training again for observation settings its completed run did not have
    (None: it had the same)."""
    ours, theirs = observation(config), observation(held)
    changed = [key for key in ours if key != "console" and ours[key] != theirs.get(key)]  # (the console: no note)
    if not changed:
        return None
    shown = ", ".join(f"{key}={json.dumps(ours[key], default=str, separators=(',', ':'))}" for key in changed)
    instead = [f"its metrics are in {run_dir.metrics_csv}"]
    if config.get("eval", {}).get("video") and not held.get("eval", {}).get("video"):
        instead.append(f"a video of its final model: lit-bench enjoy {run_dir.root} --video {run_dir.final_video}")
    return (
        f"not trained again for {shown} (how a run is watched, not what it computes); "
        f"{'; '.join(instead)}; force=true retrains it into the same directory"
    )


def open_run_dir(run_dir: RunDir, config: dict[str, Any], start: Start) -> None:
    """Make the directory ready for ``start``: cleared, or cut back to the checkpoint; then this run's config."""
    if start.damage:
        print(f"{run_dir.root}: {start.damage}; force=true: running it again", file=sys.stderr, flush=True)
    if start.action == "resume":
        assert start.step is not None
        run_dir.truncate_eval(start.step)
        run_dir.stash_metrics(start.step)
        run_dir.truncate_monitor(start.step, int(config["env"]["n_envs"]))
    else:
        run_dir.wipe()
    atomic_write_text(run_dir.config, yaml.safe_dump(config, sort_keys=False))
    atomic_write_text(run_dir.overrides, yaml.safe_dump(task_overrides()))
