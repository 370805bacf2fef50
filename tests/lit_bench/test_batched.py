"""#39: a group's seeds trained as one batched lit_sb3 ``SeedGroup`` by the harness (lit_bench.run.batched): the
one-line refusals (the launcher's, from the config alone, and the group's), one run directory per seed with an
ungrouped run's files and best model, ``batched`` in the identity only when true, a checkpoint of the other kind
refused, an interrupted group resumed to the numbers of an uninterrupted one, and a seed that fails alone leaving
the others to the numbers they have in any group (reproducible, independent of the seeds beside them)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
import torch

from lit_bench.config.identity import config_id, resolved
from lit_bench.control.seed_groups import BATCHED_ALGORITHMS, config_refusal
from lit_bench.run.batched import refusal
from lit_bench.run.checkpointing import other_kind_of_checkpoint
from lit_bench.store.rundir import RunDir
from tests.lit_bench.helpers import CHILD_ENV, compose_run, find_run, patience, read_csv, run_py
from tests.lit_bench.test_signals_stop import _interrupted, _start, _wait_for_checkpoint

pytestmark = pytest.mark.harness
TINY = ("algo=ppo", "env=CartPole", "env.n_envs=8", "algo.n_steps=32", "budget=512", "eval.every=256")


@pytest.mark.parametrize(
    ("overrides", "starts"),
    [
        (("backend=sb3",), "backend=sb3: seed groups batch lit_sb3's models"),
        (("parity=true",), "parity=true: a parity run is SB3's exact run"),
        (("trainer.accelerator=gpu",), "trainer.accelerator=gpu, trainer.devices=1: seed groups train on one CPU"),
        (("trainer.devices=2",), "trainer.accelerator=cpu, trainer.devices=2:"),
        (("algo=trpo",), "algo=trpo: seed groups batch PPO, A2C, DQN, QRDQN, SAC, TQC, TD3, DDPG, not TRPO"),
        (("algo.use_sde=true", "env=Pendulum"), "algo.use_sde=true: seed groups do not batch gSDE"),
        (("algo.policy=CnnPolicy",), "algo.policy=CnnPolicy: seed groups batch MlpPolicy"),
        (("eval.video=true",), "eval.video / eval.video_every: a batched group records no videos yet"),
        (("algo=dqn", "algo.train_freq=[1,episode]"), "train_freq: seed groups batch step-based train_freq only"),
        (("algo=sac", "env=Pendulum", "env.normalize={}"), "env.normalize: seed groups batch off-policy algorithms"),
    ],
)
def test_a_config_that_cannot_train_batched_says_why_in_one_line(overrides: tuple[str, ...], starts: str) -> None:
    """The launcher's cheap check (config_refusal, the config alone) and the group's whole one agree."""
    config = compose_run(*overrides)
    why = refusal(config)
    assert why is not None and why.startswith(starts) and "\n" not in why, why


def test_the_launchers_check_names_the_algorithms_lit_sb3_batches() -> None:
    from lit_sb3.seeds.group import BATCHED

    assert set(BATCHED_ALGORITHMS) == set(BATCHED)


def test_a_config_that_seed_groups_batch_is_not_refused() -> None:
    assert refusal(compose_run(*TINY)) is None
    assert refusal(compose_run("algo=sac", "env=Pendulum")) is None
    assert config_refusal(compose_run("algo=sac", "env=Pendulum")) is None


def test_batched_is_in_the_identity_only_when_true() -> None:
    """Every run id made before the key existed is kept; a batched seed is another run (other numbers)."""
    plain, unset = resolved(compose_run(*TINY)), resolved(compose_run(*TINY))
    del unset["batched"]
    assert config_id(plain) == config_id(unset)
    assert config_id(resolved(compose_run(*TINY, "batched=true"))) != config_id(plain)


def test_a_checkpoint_of_the_other_kind_is_refused_in_one_line(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "seed_0")
    run.checkpoints.mkdir(parents=True)
    assert other_kind_of_checkpoint(run, batched=True) is None
    (run.checkpoints / "last.ckpt").write_bytes(b"")
    line = other_kind_of_checkpoint(run, batched=True)
    assert line is not None and "checkpoint of an ungrouped run (checkpoints/last.ckpt)" in line
    assert other_kind_of_checkpoint(run, batched=False) is None
    (run.checkpoints / "last_seed_state.pt").write_bytes(b"")
    line = other_kind_of_checkpoint(run, batched=False)
    assert line is not None and "a seed trained in a batched group" in line and "\n" not in line


def test_a_batched_checkpoint_of_the_earlier_streams_is_refused_in_one_line(tmp_path: Path) -> None:
    """A batched seed's checkpoint written before the groups drew each seed's own run's random streams (no
    ``streams_format`` in its seed state) resumes nowhere; force=true trains the seed again."""
    from lit_sb3.seeds.streams import STREAMS_FORMAT

    run = RunDir(tmp_path / "seed_0")
    run.checkpoints.mkdir(parents=True)
    torch.save({"seed_state": {"seed": 0, "streams_format": STREAMS_FORMAT}}, run.checkpoints / "last_seed_state.pt")
    assert other_kind_of_checkpoint(run, batched=True) is None
    torch.save({"seed_state": {"seed": 0}}, run.checkpoints / "last_seed_state.pt")
    line = other_kind_of_checkpoint(run, batched=True)
    assert line is not None and "\n" not in line
    assert "checkpoints/last_seed_state.pt was written by an earlier lit_sb3" in line and "force=true" in line


def _numbers(run_dir: Path) -> list[tuple[str, ...]]:
    """eval.csv without its clock columns."""
    return [
        (r["timesteps"], r["mean_return"], r["std_return"], r["mean_ep_length"]) for r in read_csv(run_dir / "eval.csv")
    ]


def _metrics(run_dir: Path) -> list[dict[str, str]]:
    """train/metrics.csv without its clock columns."""
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in read_csv(run_dir / "train/metrics.csv")]


def test_a_batched_sweep_writes_one_directory_per_seed(tmp_path: Path) -> None:
    """Seeds 0, 1, 2 under the default auto with one job at a time: one batched group, a directory each (eval.csv,
    evaluations.npz, metrics, checkpoint, the best model, summary with batched=true). (Each seed's numbers do not
    depend on its group: ``test_a_seed_that_fails_alone_leaves_its_group_training_and_resumes``.)"""
    from lit_bench.cli.enjoy import enjoy

    done = run_py("-m", *TINY, "seed=0,1,2", f"out_dir={tmp_path}", "sweep=s", "hydra.launcher.n_jobs=1")
    assert done.returncode == 0 and "3 completed" in done.stdout, done.stdout + done.stderr
    three = [find_run(tmp_path / "s", seed) for seed in range(3)]
    for seed, run_dir in enumerate(three):
        assert run_dir is not None and run_dir.parent.name.startswith("batched=true,")
        for name in ("eval.csv", "evaluations.npz", "train/metrics.csv", "checkpoints/last_seed_state.pt"):
            assert (run_dir / name).is_file(), name
        best = json.loads((run_dir / "checkpoints" / "best.json").read_text())  # as an ordinary run's, it loads:
        assert best["mean_return"] == max(float(r["mean_return"]) for r in read_csv(run_dir / "eval.csv"))
        assert len(enjoy(run_dir, checkpoint="best", episodes=1)) == 1  # lit-bench enjoy <run> --checkpoint best
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["status"] == "completed" and summary["seed"] == seed and summary["timesteps"] == 512
        assert "batched=true" in summary["overrides"] and "group of 3" in summary["cpu_time_note"]
        assert [r["timesteps"] for r in read_csv(run_dir / "eval.csv")] == ["256", "512"]
    assert len({tuple(_numbers(d)) for d in three if d is not None}) == 3  # three seeds, three runs


def test_sigterm_stops_a_batched_group_at_a_checkpoint_and_the_rerun_resumes_it_exactly(tmp_path: Path) -> None:
    """Every seed is checkpointed and ``interrupted``; rerunning the command resumes the group to the numbers of
    an uninterrupted group."""
    args = ["-m", *TINY[:2], "env.n_envs=1", "algo.n_steps=64", "algo.batch_size=64", "eval.every=320"]
    args += ["eval.episodes=2", "budget=3200", "seed=0,1", "seeds_per_process=2", "sweep=g"]
    process = _start([*args, f"out_dir={tmp_path / 'cut'}"])
    parent = tmp_path / "cut" / "g" / "ppo" / "CartPole"
    seeds = _wait_for_checkpoint(process, parent / "seed_0", parent / "seed_1")
    os.kill(process.pid, signal.SIGTERM)
    output, _ = process.communicate(timeout=patience(180))
    assert process.returncode == 143, output
    assert "Traceback" not in output and "2 interrupted (2 runs)" in output, output
    steps = [_interrupted(d, "SIGTERM") for d in seeds]
    assert steps[0] == steps[1] < 3200
    again = run_py(*args, f"out_dir={tmp_path / 'cut'}")
    assert again.returncode == 0 and "2 completed (2 runs)" in again.stdout, again.stdout + again.stderr
    whole = run_py(*args, f"out_dir={tmp_path / 'whole'}")
    assert whole.returncode == 0, whole.stdout + whole.stderr
    for seed, run_dir in enumerate(seeds):
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["status"] == "completed" and summary["resumed_from"] == steps[seed]
        uninterrupted = find_run(tmp_path / "whole" / "g", seed)
        assert uninterrupted is not None
        assert _numbers(run_dir) == _numbers(uninterrupted)
        assert _metrics(run_dir) == _metrics(uninterrupted)


def test_a_seed_that_fails_alone_leaves_its_group_training_and_resumes(tmp_path: Path) -> None:
    """Seeds 0, 1, 2 in one batched group (auto): seed 2's env raises after 300 steps, seed 1's rewards turn NaN
    there (its training diverges). Each is recorded failed with its own one-line error, its checkpoint kept; seed 0
    trains on and ends exactly as in a group without them; rerunning the command resumes the two. The env reports
    ``is_success``: every evaluation records a success rate; the best evaluation's model is kept."""
    args = ["-m", *TINY[:2], "env.n_envs=1", "algo.n_steps=64", "algo.batch_size=64", "budget=640", "eval.every=128"]
    args += ["eval.episodes=2", "env.make={_target_:crash_env.success_env,_partial_:true}", "sweep=f"]
    env = {**CHILD_ENV, "LIT_BENCH_TEST_NAN_SEED": "1", "LIT_BENCH_TEST_CRASH_SEED": "2"}
    done = run_py(*args, "seed=0,1,2", f"out_dir={tmp_path / 'f'}", env=env)
    assert done.returncode == 1 and "1 completed, 2 failed (3 runs)" in done.stdout, done.stdout + done.stderr
    runs = [find_run(tmp_path / "f" / "f", seed) for seed in range(3)]
    assert all(r is not None and "batched=true," in r.parent.name for r in runs)
    summaries = [json.loads((r / "summary.json").read_text()) for r in runs if r is not None]
    assert summaries[0]["status"] == "completed"
    assert summaries[1]["status"] == "failed" and summaries[1]["error"].startswith("training diverged at env step ")
    assert summaries[2]["status"] == "failed" and summaries[2]["error"] == "RuntimeError: injected failure (test)"
    assert "Traceback" in summaries[2]["traceback"] and all("\n" not in s["error"] for s in summaries[1:])
    clean = run_py(*args, "seed=0,3", f"out_dir={tmp_path / 'c'}")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    alone = find_run(tmp_path / "c" / "f", 0)
    assert alone is not None and runs[0] is not None
    assert _numbers(runs[0]) == _numbers(alone) and _metrics(runs[0]) == _metrics(alone)
    rows = read_csv(runs[0] / "eval.csv")
    successes = np.load(runs[0] / "evaluations.npz")["successes"]
    assert [float(r["success_rate"]) for r in rows] == pytest.approx(successes.mean(axis=1).tolist())
    best = json.loads((runs[0] / "checkpoints" / "best.json").read_text())
    assert best["mean_return"] == max(float(r["mean_return"]) for r in rows)
    again = run_py(*args, "seed=0,1,2", f"out_dir={tmp_path / 'f'}")  # without the faults
    assert again.returncode == 0 and "3 completed (3 runs)" in again.stdout, again.stdout + again.stderr
    assert again.stdout.count("already completed, skipped") == 1
    for run_dir in runs[1:]:
        assert run_dir is not None
        resumed = json.loads((run_dir / "summary.json").read_text())
        assert resumed["status"] == "completed" and resumed["resumed_from"] == 256
