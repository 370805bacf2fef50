"""The skip / resume / fresh decision on what a run directory holds (no training: files written by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lit_bench.run import train
from lit_bench.run.train import Start, decide
from lit_bench.store.rundir import HeldRun, RunDir

from .helpers import write_run

pytestmark = pytest.mark.harness
HELD = {"algo_name": "ppo"}  # the directory's config (already known to be this run's)


def _run(tmp_path: Path, status: str) -> RunDir:
    run = RunDir(write_run(tmp_path, "ppo", "CartPole", 0, "lit", [10.0, 20.0], status=status))
    run.config.write_text(yaml.safe_dump(HELD))
    return run


@pytest.mark.parametrize(
    ("status", "checkpoint", "force", "expected"),
    [
        ("completed", None, False, Start("skip")),
        ("completed", None, True, Start("fresh")),  # force: completed runs are run again
        ("running", 1000, False, Start("resume", 1000)),  # killed mid-run: from its checkpoint
        ("interrupted", 1000, True, Start("fresh")),
        ("running", None, False, Start("fresh")),  # no checkpoint that reads back
        ("running", 2000, False, Start("resume", 2000)),  # killed in the final evaluation: only it is redone
    ],
)
def test_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str, checkpoint: int | None, force: bool, expected: Start
) -> None:
    monkeypatch.setattr(train, "resume_point", lambda run, backend, batched=False: checkpoint)
    run = _run(tmp_path, status)
    found = run.held_run()
    assert (found.summary, found.config) == (json.loads(run.summary.read_text()), HELD)
    assert decide(run, found, backend="lit", budget=2000, force=force) == expected


def test_a_new_directory_starts_afresh_and_a_damaged_one_is_left_unless_forced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(train, "resume_point", lambda *args: pytest.fail("nothing to resume from"))
    new = RunDir(tmp_path / "new")
    assert new.held_run() == HeldRun()
    assert decide(new, new.held_run(), backend="lit", budget=2000, force=False) == Start("fresh")
    run = _run(tmp_path, "completed")
    run.eval_csv.write_text(run.eval_csv.read_text()[:-3])  # the final evaluation's row cut short
    truncated = run.held_run()
    run.summary.write_text("{")  # and then its summary.json unreadable
    unreadable = run.held_run()
    for force, action in ((False, "damaged"), (True, "fresh")):
        assert decide(run, truncated, backend="lit", budget=2000, force=force) == Start(
            action, damage="eval.csv is truncated (its last row is incomplete)"
        )
        assert decide(run, unreadable, backend="lit", budget=2000, force=force) == Start(
            action, damage="summary.json is unreadable"
        )
