"""Multi-process runs of the harness (``trainer.devices=2 trainer.strategy=ddp``, CPU/gloo): bad settings (and
precisions RLTrainer does not train with) fail in one line before training; a run writes one run directory (rank
0's); a failure on either rank fails the run."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import read_write

from lit_bench.run.train import run
from tests.lit_bench.helpers import CHILD_ENV, compose_run, find_run, read_csv, run_py

DDP = ("trainer.devices=2", "trainer.strategy=ddp")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["algo=sac", "env=Pendulum", *DDP],
            "trainer.devices=2: SAC trains in one process (multi-process training: PPO",
        ),
        (["algo=ars", *DDP], "trainer.devices=2: ARS trains in one process"),
        (["trainer.devices=2"], "trainer.strategy: multi-process runs (trainer.devices=2) need trainer.strategy=ddp"),
        (["backend=sb3", *DDP], "trainer.devices=2: backend=sb3 trains in one process; use backend=lit"),
        (["trainer.devices=two"], "trainer.devices: a number of processes (1, 2, ...), got 'two'"),
        (["trainer.precision=64-true"], "trainer.precision: one of 32-true, bf16-mixed, 16-mixed (16-mixed runs as"),
    ],
)
def test_bad_multi_process_settings_fail_in_one_line(overrides: list[str], message: str, tmp_path: Path) -> None:
    summary = run(compose_run(*overrides, f"out_dir={tmp_path}"))
    assert summary["status"] == "failed" and summary["error"].startswith(message), summary["error"]
    assert "\n" not in summary["error"] and summary["traceback"] is None


def test_multi_process_run_is_not_a_sweep_job(tmp_path: Path) -> None:
    cfg = compose_run(*DDP, f"out_dir={tmp_path}")
    with read_write(cfg.hydra):
        cfg.hydra.mode = RunMode.MULTIRUN  # Lightning starts the other ranks by re-running the command line
    HydraConfig.instance().set_config(cfg)
    summary = run(cfg)
    assert summary["status"] == "failed"
    assert summary["error"].startswith("trainer.devices=2: multi-process training runs one run per command")


def _checkpoint_steps(path: Path) -> int:
    from lit_sb3.common.safe_load import trusted_checkpoint

    with trusted_checkpoint(path):
        return int(torch.load(path, map_location="cpu", weights_only=True)["lit_sb3"]["num_timesteps"])


@pytest.mark.slow
def test_two_process_run_writes_one_run_directory(tmp_path: Path) -> None:
    result = run_py(
        "algo=ppo", "env=CartPole", *DDP, "budget=2048", "eval.every=1024", f"out_dir={tmp_path}", timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ppo on CartPole") == 1  # rank 0 reports the run; rank 1 prints nothing
    run_dir = find_run(tmp_path / "default", 0)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["timesteps"] == 2048  # the budget counts both ranks' steps
    assert [int(r["timesteps"]) for r in read_csv(run_dir / "eval.csv")] == [1024, 2048]
    assert _checkpoint_steps(run_dir / "checkpoints" / "last.ckpt") == 2048
    assert (run_dir / "checkpoints" / "best.ckpt").is_file()
    steps = [int(float(r["step"])) for r in read_csv(run_dir / "train" / "metrics.csv")]
    assert steps == [512, 1024, 1536, 2048]  # one row per rollout of both ranks (8 envs x 32 steps each)


def _processes_of(out_dir: Path) -> list[str]:
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    return [line for line in listing if f"out_dir={out_dir}" in line]


@pytest.mark.slow
@pytest.mark.parametrize("crash_seed", [0, 10_000], ids=["rank0", "rank1"])  # rank r's first env: seed + 10_000 r
def test_a_failing_rank_fails_the_run(crash_seed: int, tmp_path: Path) -> None:
    result = run_py(
        "algo=ppo",
        "env=CartPole",
        *DDP,
        "budget=8192",
        "eval.every=4096",
        f"out_dir={tmp_path}",
        "env.wrappers=[{_target_:tests.lit_bench.crash_env.CrashOnSeed,_partial_:true}]",
        env={**CHILD_ENV, "LIT_BENCH_TEST_CRASH_SEED": str(crash_seed)},
        timeout=600,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "injected failure (test)" in result.stdout + result.stderr  # the failing rank's own error is shown
    summary = json.loads((find_run(tmp_path / "default", 0) / "summary.json").read_text())
    assert summary["status"] == "failed"
    deadline = time.monotonic() + 60  # the other rank's collective step fails once its peer is gone: no hang
    while _processes_of(tmp_path) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _processes_of(tmp_path)


def test_a_rank_failing_before_fit_fails_the_run(tmp_path: Path) -> None:
    """Rank 1 fails building its env while rank 0 waits for it in the rendezvous: the run is recorded as failed and
    exits 1 (Lightning's launcher would SIGKILL rank 0: exit 137, the summary still saying running)."""
    result = run_py(
        "algo=ppo",
        "env=CartPole",
        *DDP,
        "budget=4096",
        f"out_dir={tmp_path}",
        "env.wrappers=[{_target_:tests.lit_bench.crash_env.CrashOnRank,_partial_:true}]",
        env={**CHILD_ENV, "LIT_BENCH_TEST_CRASH_RANK": "1"},
        timeout=300,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "injected failure before fit (test)" in result.stderr  # rank 1's own error
    summary = json.loads((find_run(tmp_path / "default", 0) / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"].startswith("rank 1 exited with code 1"), summary
    assert "FAILED: rank 1 exited with code 1" in result.stdout and not _processes_of(tmp_path)


def test_a_further_rank_without_rank0s_plan_fails_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lit_bench.run.ranks import PLAN_ENV, rank_exit_code

    monkeypatch.setenv("LOCAL_RANK", "1")  # as Lightning's launcher sets it for the processes it starts
    monkeypatch.delenv(PLAN_ENV, raising=False)
    summary = run(compose_run(*DDP, f"out_dir={tmp_path}"))
    assert summary["rank"] == 1 and summary["status"] == "failed" and rank_exit_code(summary) == 1
    assert summary["error"].startswith("trainer.devices: this process is rank > 0 of a multi-process")
    assert not any(tmp_path.iterdir())  # a further rank never writes the run directory
