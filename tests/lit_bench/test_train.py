"""The skip / resume / fresh decision on what a run directory holds (no training: files written by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lit_bench.run import train
from lit_bench.run.train import Start, decide
from lit_bench.store.rundir import RunDir

from .helpers import write_run

pytestmark = pytest.mark.harness
HELD = {"algo_name": "ppo"}  # the directory's config (already known to be this run's)


def _run(tmp_path: Path, status: str) -> tuple[RunDir, dict]:
    run = RunDir(write_run(tmp_path, "ppo", "CartPole", 0, "lit", [10.0, 20.0], status=status))
    return run, json.loads(run.summary.read_text())


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
    run, summary = _run(tmp_path, status)
    assert decide(run, summary, HELD, backend="lit", budget=2000, force=force) == expected


def test_a_new_directory_starts_afresh_and_a_damaged_one_is_left_unless_forced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(train, "resume_point", lambda *args: pytest.fail("nothing to resume from"))
    assert decide(RunDir(tmp_path / "new"), None, None, backend="lit", budget=2000, force=False) == Start("fresh")
    run, summary = _run(tmp_path, "completed")
    run.eval_csv.write_text(run.eval_csv.read_text()[:-3])  # the final evaluation's row cut short
    for force, action in ((False, "damaged"), (True, "fresh")):
        assert decide(run, summary, HELD, backend="lit", budget=2000, force=force) == Start(
            action, damage="eval.csv is truncated (its last row is incomplete)"
        )
        assert decide(run, None, HELD, backend="lit", budget=2000, force=force) == Start(
            action, damage="summary.json is unreadable"
        )
