"""Faults in the harness: a run killed with SIGKILL resumes to exactly the uninterrupted run's results, and a
damaged or missing checkpoint never wedges a run (fall back to the previous one, else start afresh)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lit_bench.run.train import run
from tests.lit_bench.helpers import compose_run, find_run, kill_when_checkpointed, read_csv, run_py

pytestmark = pytest.mark.harness

SAC_TINY = (
    "algo=sac",
    "env=Pendulum",
    "budget=400",
    "eval.every=100",
    "checkpoint.every=50",
    "eval.episodes=1",
    "algo.learning_starts=100",
    "algo.buffer_size=150",
    "algo.batch_size=32",
    "algo.policy_kwargs={net_arch:[32,32]}",
)
SCORE_FIELDS = ("timesteps", "mean_return", "std_return", "median_return", "mean_ep_length")


def test_sigkilled_run_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    whole = run_py(*SAC_TINY, f"out_dir={tmp_path}", "sweep=whole")
    assert whole.returncode == 0, whole.stdout + whole.stderr

    args = [*SAC_TINY, f"out_dir={tmp_path}", "sweep=kill"]
    run_dir = kill_when_checkpointed(args, tmp_path / "kill", 200)
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "running"
    resumed = run_py(*args)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed" and 200 <= summary["resumed_from"] < 400

    def scores(root: Path) -> list[tuple[str, ...]]:
        return [tuple(row[k] for k in SCORE_FIELDS) for row in read_csv(root / "eval.csv")]

    expected = scores(Path(find_run(tmp_path / "whole", 0)))
    assert [int(s[0]) for s in expected] == [100, 200, 300, 400]
    assert scores(run_dir) == expected


def failed_run(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], Path]:
    """A PPO run that crashed after 300 env steps, leaving last.ckpt (256 steps) and previous.ckpt (192) behind."""
    overrides = [
        "algo=ppo",
        "env=CartPole",
        "env.n_envs=1",
        "algo.n_steps=32",
        "algo.batch_size=32",
        "budget=480",
        "eval.every=160",
        "checkpoint.every=64",
        "eval.episodes=2",
        f"seed={seed}",
        f"out_dir={tmp_path}",
        "sweep=faults",
        "env.wrappers=[{_target_:tests.lit_bench.crash_env.CrashOnSeed,_partial_:true}]",
    ]
    monkeypatch.setenv("LIT_BENCH_TEST_CRASH_SEED", str(seed))
    summary = run(compose_run(*overrides))
    monkeypatch.delenv("LIT_BENCH_TEST_CRASH_SEED")
    assert summary["status"] == "failed" and "injected failure" in summary["error"]
    return overrides, Path(summary["run_dir"])


def test_damaged_or_missing_checkpoint_never_wedges_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture
) -> None:
    overrides, run_dir = failed_run(tmp_path, 0, monkeypatch)
    last, previous = run_dir / "checkpoints" / "last.ckpt", run_dir / "checkpoints" / "previous.ckpt"
    assert last.is_file() and previous.is_file()
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])  # truncated, as by a full disk
    summary = run(compose_run(*overrides))
    assert summary["status"] == "completed" and summary["resumed_from"] == 192, summary.get("error")
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "last.ckpt is unreadable" in err[0] and "resuming from previous.ckpt at 192" in err[0]

    overrides, run_dir = failed_run(tmp_path, 1, monkeypatch)
    for name in ("last.ckpt", "previous.ckpt"):
        (run_dir / "checkpoints" / name).unlink()
    summary = run(compose_run(*overrides))
    assert summary["status"] == "completed" and summary["resumed_from"] is None and summary["timesteps"] == 480
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "last.ckpt is missing" in err[0] and "starting the run afresh" in err[0]
