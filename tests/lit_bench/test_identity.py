"""Run identity, one writer per run directory, the objective and Optuna: sweeps whose results never collide.

Reproductions of issue #10: a hyperparameter sweep into one directory, a changed config deleting a completed run,
two identical sweeps at once, and a hyperparameter search with Hydra's Optuna sweeper.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from lit_bench.analysis.load import load_runs
from lit_bench.config.identity import identify, slug
from lit_bench.control.sweep import RunFailed, job_result
from lit_bench.store.rundir import RunDir
from tests.lit_bench.helpers import CHILD_ENV, REPO, TINY, compose_run, patience, read_csv, run_py

pytestmark = pytest.mark.harness


def eval_steps(run_dir: Path) -> list[int]:
    return [int(r["timesteps"]) for r in read_csv(run_dir / "eval.csv")]


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def test_identity_maps_each_config_to_its_own_directory() -> None:
    default = identify(compose_run("algo=ppo", "env=CartPole"))
    assert default.subdir == Path("ppo/CartPole/seed_0") and default.variant == "" and default.overrides == []
    # the value the tuned algo_env file already sets, volatile keys and the location are not differences
    same = identify(
        compose_run(
            "algo=ppo",
            "env=CartPole",
            "budget=100000",
            "force=true",
            "sweep=x",
            "out_dir=/y",
            "objective.metric=iqm_last",
        )
    )
    assert same.subdir == default.subdir and same.config_hash == default.config_hash
    seed1 = identify(compose_run("algo=ppo", "env=CartPole", "seed=1"))
    assert seed1.config_id == default.config_id and seed1.config_hash != default.config_hash
    assert seed1.subdir == Path("ppo/CartPole/seed_1")

    lr = identify(compose_run("algo=ppo", "env=CartPole", "algo.learning_rate=1e-3", "budget=3000"))
    assert lr.variant == "algo.learning_rate=0.001,budget=3000"
    assert lr.overrides == ["algo.learning_rate=0.001", "budget=3000"]
    assert lr.subdir == Path(f"ppo/CartPole/algo.learning_rate=0.001,budget=3000-{lr.config_id}/seed_0")
    assert identify(compose_run("algo=ppo", "env=CartPole", "budget=3000", "algo.learning_rate=0.001")) == lr
    other = identify(compose_run("algo=ppo", "env=CartPole", "algo.learning_rate=3e-4", "budget=3000"))
    assert other.config_id != lr.config_id and other.subdir != lr.subdir

    sb3 = identify(compose_run("algo=ppo", "env=CartPole", "backend=sb3", "eval.episodes=3"))
    assert sb3.subdir.parts[:2] == ("ppo@sb3", "CartPole") and sb3.variant == "eval.episodes=3"
    wrapped = identify(compose_run("env.wrappers=[{_target_:crash_env.CrashOnSeed,_partial_:true}]"))
    assert wrapped.variant == "env.wrappers=CrashOnSeed"

    # Hydra's own directory is the same function of the config
    cfg = compose_run("algo=ppo", "env=CartPole", "algo.learning_rate=1e-3", "budget=3000", "seed=4")
    assert cfg.hydra.sweep.subdir == str(identify(cfg).subdir)
    assert cfg.hydra.run.dir == f"results/runs/default/{identify(cfg).subdir}"


def test_slug_is_path_safe_and_bounded() -> None:
    diffs = [(f"algo.policy_kwargs.net_arch_{i}", [64, 64]) for i in range(10)] + [("~env.kwargs", None)]
    name = slug(diffs)
    assert len(name) <= 84 and "/" not in name and " " not in name and name.endswith(",+9")
    assert slug([("~env.kwargs", None)]) == "env.kwargs=deleted"


def test_changed_config_never_deletes_a_completed_run(tmp_path: Path) -> None:
    from lit_bench.run.train import run

    common = (*TINY, f"out_dir={tmp_path}", "sweep=change")
    first = run(compose_run(*common))
    assert first["status"] == "completed" and first["objective"] == first["final_mean_return"]
    old = Path(first["run_dir"])
    old_eval = (old / "eval.csv").read_text()

    changed = run(compose_run(*("budget=640" if a == "budget=512" else a for a in common)))
    assert changed["status"] == "completed" and Path(changed["run_dir"]) != old
    assert changed["config_id"] != first["config_id"] and "budget=640" in changed["variant"]
    assert (old / "eval.csv").read_text() == old_eval and summary_of(old)["status"] == "completed"

    again = run(compose_run(*common))  # the same command maps to the same directory and skips it
    assert again["status"] == "skipped" and again["run_dir"] == first["run_dir"]
    assert again["objective"] == first["objective"]
    iqm = run(compose_run(*common, "objective.metric=iqm_last", "objective.last=2"))
    assert iqm["status"] == "skipped" and iqm["run_dir"] == first["run_dir"]  # the objective is not the config
    rows = read_csv(old / "eval.csv")
    assert iqm["objective"] == pytest.approx(sum(float(r["mean_return"]) for r in rows[-2:]) / 2)

    # A directory holding another config (defaults changed since it ran) is reported and left exactly as it was.
    held = yaml.safe_load((old / "config.yaml").read_text())
    held["algo"]["gamma"] = 0.5
    (old / "config.yaml").write_text(yaml.safe_dump(held, sort_keys=False))
    before = {p: p.stat().st_mtime_ns for p in old.rglob("*") if p.is_file() and p.name != ".lock"}
    refused = run(compose_run(*common, "force=true"))
    assert refused["status"] == "failed" and "holds a completed run of another config" in refused["error"]
    assert {p: p.stat().st_mtime_ns for p in old.rglob("*") if p.is_file() and p.name != ".lock"} == before


def test_job_result_is_the_objective_and_a_failed_trial_has_no_value() -> None:
    done = {"status": "completed", "objective": 12.5, "run_dir": "x"}
    failed = {"status": "failed", "error": "boom", "run_dir": "x"}
    cfg = compose_run("hydra.mode=MULTIRUN", "hydra/sweeper=tpe")
    assert job_result(cfg, done) == 12.5
    with pytest.raises(RunFailed, match="x: boom"):  # Optuna tells the trial as FAIL
        job_result(cfg, failed)
    cfg = compose_run("hydra.mode=MULTIRUN")
    assert math.isnan(job_result(cfg, failed))  # basic sweeper: ignored; the sweep table reports it, exit 1
    cfg = compose_run("hydra.mode=RUN")
    with pytest.raises(SystemExit):
        job_result(cfg, failed)


def test_learning_rate_sweep_writes_one_directory_per_value(tmp_path: Path) -> None:
    """Issue #10 reproduction 1, incl. a diverging value: every config its own directory and continuous eval.csv."""
    result = run_py(
        "-m", *TINY, "algo.learning_rate=3e-4,1e-3,1e30", f"out_dir={tmp_path}", "sweep=lr", "hydra/launcher=basic"
    )
    assert result.returncode == 1, result.stdout + result.stderr  # the diverging run failed, honestly
    assert "2 completed, 1 failed (3 runs)" in result.stdout
    runs = load_runs([tmp_path / "lr"])
    assert len(runs) == 3 and runs.config_id.nunique() == 3 and runs.run_dir.nunique() == 3
    for variant, value in zip(sorted(runs.variant), ("0.0003", "0.001", "1e+30")):
        assert variant.startswith(f"algo.learning_rate={value},budget=512,eval.episodes=2"), variant
    assert (runs.sweep == "lr").all()
    for run in runs[runs.status == "completed"].itertuples():
        assert eval_steps(Path(run.run_dir)) == [256, 512]
    groups = runs.groupby(["sweep", "algo", "backend", "env", "config_id"]).size()
    assert len(groups) == 3 and (groups == 1).all()


def _wait_for(process: subprocess.Popen, text: str, timeout: float) -> str:
    """Read the process's stdout until a line contains ``text``; returns what was read."""
    seen = ""
    deadline = time.monotonic() + patience(timeout)
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        seen += line
        if text in line:
            return seen
    raise AssertionError(f"{text!r} never printed; got:\n{seen}")


def test_second_writer_waits_for_the_lock_and_a_killed_holder_never_blocks(tmp_path: Path) -> None:
    args = [*TINY, f"out_dir={tmp_path}", "sweep=lock"]
    run_dir = RunDir(tmp_path / "lock" / identify(compose_run(*args)).subdir)
    run_dir.root.mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (  # a killed holder: its lock dies with it
                "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_EX); print('held', "
                "flush=True); time.sleep(600)"
            ),
            str(run_dir.lock_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    _wait_for(holder, "held", 30)
    holder.kill()
    holder.wait()
    with run_dir.lock():  # taken at once
        process = subprocess.Popen(
            [sys.executable, "run.py", *args],
            cwd=REPO,
            env=CHILD_ENV,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_for(process, "being written by pid", 120)
            time.sleep(1.0)
            assert process.poll() is None, "the second writer did not wait"
            assert not run_dir.summary.exists() and not run_dir.eval_csv.exists()
        except BaseException:
            process.kill()
            raise
    out, _ = process.communicate(timeout=patience(180))
    assert process.returncode == 0, out
    assert summary_of(run_dir.root)["status"] == "completed" and eval_steps(run_dir.root) == [256, 512]


@pytest.mark.slow
def test_two_identical_sweeps_at_once_write_each_run_once(tmp_path: Path) -> None:
    """Issue #10 reproduction 3: both copies end honestly, each run written exactly once."""
    args = [
        sys.executable,
        "run.py",
        "-m",
        *TINY,
        "seed=0,1",
        f"out_dir={tmp_path}",
        "sweep=race",
        "hydra/launcher=basic",
    ]
    copies = [
        subprocess.Popen(args, cwd=REPO, env=CHILD_ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(2)
    ]
    outputs = [c.communicate(timeout=patience(300))[0] for c in copies]
    for copy, out in zip(copies, outputs):
        assert copy.returncode == 0, out
        assert "2 completed (2 runs)" in out
    runs = load_runs([tmp_path / "race"])
    assert len(runs) == 2 and (runs.status == "completed").all()
    for run in runs.itertuples():
        assert eval_steps(Path(run.run_dir)) == [256, 512]
        metric_steps = [int(float(r["step"])) for r in read_csv(Path(run.run_dir) / "train" / "metrics.csv")]
        assert metric_steps == sorted(set(metric_steps))
    trained = sum(out.count(": completed;") for out in outputs)
    skipped = sum(out.count("already completed, skipped") for out in outputs)
    assert (trained, skipped) == (2, 2), outputs


def test_optuna_sweep_three_trials(tmp_path: Path) -> None:
    """The Optuna sweeper (TPE preset): 3 trials, 3 directories, the best trial's config next to the sweep."""
    pytest.importorskip("optuna", minversion="4.0", reason="needs `pip install -e .[hpo]`")
    result = run_py(
        "-m",
        "hydra/sweeper=tpe",
        "hydra.sweeper.n_trials=3",
        "hydra.sweeper.n_jobs=3",
        "algo.learning_rate=tag(log, interval(1e-4, 1e-2))",
        *TINY,
        f"out_dir={tmp_path}",
        "sweep=hpo",
        "hydra/launcher=basic",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 completed (3 runs)" in result.stdout
    runs = load_runs([tmp_path / "hpo"])
    assert len(runs) == 3 and runs.config_id.nunique() == 3 and (runs.status == "completed").all()
    best = yaml.safe_load((tmp_path / "hpo" / "best_trial.yaml").read_text())
    assert best["direction"] == "maximize" and best["value"] == runs.objective.max()
    assert best["run_dirs"] == [runs.loc[runs.objective.idxmax(), "run_dir"]]
    assert best["config"]["algo"]["learning_rate"] == best["params"]["algo.learning_rate"]
    trials = read_csv(tmp_path / "hpo" / "trials.csv")
    assert max(float(t["value"]) for t in trials) == best["value"]
    assert os.path.basename(best["run_dirs"][0]) == "seed_0"


OBSERVED = (
    "logger=tensorboard",
    "trainer.enable_progress_bar=true",
    "trainer.log_every_n_steps=5",
    "eval.video=true",
    "eval.video_every=2",
    "log_interval=3",
    "checkpoint.every=128",
    "console.progress=off",
)


def test_observation_settings_never_change_the_directory() -> None:
    from lit_bench.config.identity import _digest, resolved

    default = identify(compose_run("algo=ppo", "env=CartPole"))
    observed = identify(compose_run("algo=ppo", "env=CartPole", *OBSERVED))
    assert observed == default
    lr = identify(compose_run("algo=ppo", "env=CartPole", "algo.learning_rate=1e-3"))
    assert identify(compose_run("algo=ppo", "env=CartPole", "algo.learning_rate=1e-3", *OBSERVED)) == lr
    # the directories of runs made before observation settings left the identity keep their names
    config = resolved(compose_run("algo=ppo", "env=CartPole", "algo.learning_rate=1e-3"))
    new_nodes = ("console", "hpo", "stop_timeout_s", "step_timeout_s", "seeds_per_process", "seed_group", "batched")
    before = {
        k: v
        for k, v in config.items()
        if k not in ("force", "objective", "out_dir", "sweep", "seed", "hydra", *new_nodes)
    }
    assert lr.config_id == _digest(before, 10)
    # what changes the numbers still does
    for override in (
        "eval.episodes=3",
        "eval.every=1000",
        "trainer.precision=bf16-mixed",
        "checkpoint.replay_buffer=false",
        "parity=true",
        "threads=2",
    ):
        assert identify(compose_run("algo=ppo", "env=CartPole", override)).subdir != default.subdir, override


def test_a_completed_run_is_not_retrained_for_observation_settings(tmp_path: Path) -> None:
    from lit_bench.run.outcome import describe
    from lit_bench.run.train import run

    common = (*TINY, f"out_dir={tmp_path}")
    first = run(compose_run(*common))
    assert first["status"] == "completed" and first["observation"]["eval.video"] is False
    eval_csv = (Path(first["run_dir"]) / "eval.csv").read_text()
    # a run that does not train again does not need its loggers (TensorBoard may not be installed)
    again = run(compose_run(*common, "logger=tensorboard", "eval.video=true", "trainer.enable_progress_bar=true"))
    assert again["status"] == "skipped" and again["run_dir"] == first["run_dir"]
    line = describe(again)
    assert "\n" not in line and "already completed, skipped" in line
    assert "not trained again for logger=" in line and "eval.video=true" in line
    assert "lit-bench enjoy" in line and "force=true retrains it into the same directory" in line
    assert (Path(first["run_dir"]) / "eval.csv").read_text() == eval_csv
    assert run(compose_run(*common))["note"] is None  # the same settings: nothing to say
    # the console only changes what this command prints: nothing to say either
    assert run(compose_run(*common, "console.progress=lines", "console.heartbeat_s=5"))["note"] is None

    forced = run(compose_run(*common, "trainer.enable_progress_bar=true", "force=true"))
    assert forced["status"] == "completed" and forced["run_dir"] == first["run_dir"]
    assert summary_of(Path(first["run_dir"]))["observation"]["trainer.enable_progress_bar"] is True
    returns = [r["mean_return"] for r in read_csv(Path(first["run_dir"]) / "eval.csv")]
    assert returns == [line.split(",")[2] for line in eval_csv.splitlines()[1:]]  # the same numbers, trained again
