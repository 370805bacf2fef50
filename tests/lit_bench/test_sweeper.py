"""Issue #28: the project's own Optuna sweeper (current Optuna), samplers and pruners as groups, pruning inside
running trials, studies that resume without wasting a trial, the study's files, objectives over seeds."""

from __future__ import annotations

import json
import math
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from lit_bench.config.checks import ConfigError
from lit_bench.control.sweep import RunPruned, job_result
from lit_bench.run import train as run_train
from lit_bench.run.train import Start, decide
from lit_bench.stats import seeds_value
from lit_bench.store.rundir import HeldRun, RunDir
from tests.lit_bench.helpers import CHILD_ENV, CONF, REPO, TINY, compose_run, read_csv, run_py

optuna = pytest.importorskip("optuna", minversion="4.0", reason="needs `pip install -e .[hpo]` (current Optuna)")
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402
from optuna.trial import TrialState, create_trial  # noqa: E402

from lit_bench.analysis.hpo import plot_study, plot_sweep  # noqa: E402
from lit_bench.config.hydra_versions import VERSION_BASE  # noqa: E402
from lit_bench.control import study as studies  # noqa: E402
from lit_bench.control.hpo_results import write_results  # noqa: E402

pytestmark = pytest.mark.harness
PRESETS = sorted(p.stem for p in (CONF / "hydra" / "sweeper").glob("*.yaml"))
SAMPLERS = sorted(p.stem for p in (CONF / "hydra" / "sweeper" / "sampler").glob("*.yaml"))
PRUNERS = sorted(p.stem for p in (CONF / "hydra" / "sweeper" / "pruner").glob("*.yaml"))
LR = "algo.learning_rate=tag(log, interval(1e-4, 1e-2))"


def sweep(out: Path, *args: str, launcher: str = "basic") -> subprocess.CompletedProcess:
    return run_py("-m", *TINY, f"out_dir={out}", "sweep=hpo", f"hydra/launcher={launcher}", *args, timeout=600)


def trials(out: Path) -> list[dict[str, str]]:
    return read_csv(out / "hpo" / "trials.csv")


def summary_of(run_dir: str | Path) -> dict:
    return json.loads((Path(run_dir) / "summary.json").read_text())


# ------------------------------------------------------------------------------------------------- config


def test_search_space_from_hydra_syntax_and_optuna_yaml() -> None:
    params = {
        "algo.gamma": "choice(0.9, 0.99)",
        "algo.n_epochs": "range(5, 20, 5)",
        "algo.ent_coef": {"type": "float", "low": 1e-8, "high": 0.1, "log": True},
        "algo.batch_size": {"type": "categorical", "choices": [64, 128]},
        "algo.vf_coef": "0.4,0.5",
    }
    space, fixed = studies.search_space(
        params, [LR, "budget=512", "algo.n_steps=tag(int, interval(8, 64))", "algo.gamma=0.95"]
    )
    assert space == {
        "algo.n_epochs": IntDistribution(5, 15, step=5),
        "algo.ent_coef": FloatDistribution(1e-8, 0.1, log=True),
        "algo.batch_size": CategoricalDistribution([64, 128]),
        "algo.vf_coef": CategoricalDistribution([0.4, 0.5]),
        "algo.learning_rate": FloatDistribution(1e-4, 1e-2, log=True),
        "algo.n_steps": IntDistribution(8, 64),
    }  # algo.gamma=0.95 on the command line fixes the preset's searched gamma
    assert fixed == ["budget=512", "algo.gamma=0.95"]
    with pytest.raises(ConfigError, match="search space is empty"):
        studies.search_space({}, ["budget=512"])
    with pytest.raises(ConfigError, match=r"params.algo.gamma.type=uniform: choose one of float, int, categorical"):
        studies.search_space({"algo.gamma": {"type": "uniform"}}, [])
    # bounds Optuna refuses: one line naming the override, not Optuna's traceback
    with pytest.raises(ConfigError, match=r"^algo.learning_rate=tag\(log, interval\(0, 1e-2\)\): .*low"):
        studies.search_space({}, ["algo.learning_rate=tag(log, interval(0, 1e-2))"])
    with pytest.raises(ConfigError, match=r"^algo.gamma: .*low"):
        studies.search_space({"algo.gamma": "interval(0.99, 0.9)"}, [])


def test_samplers_and_pruners_by_name_with_one_line_errors() -> None:
    assert type(studies.make_sampler({"name": "random", "seed": 1})).__name__ == "RandomSampler"
    assert type(studies.make_pruner(None)).__name__ == "NopPruner"
    with pytest.raises(ConfigError, match=r"hydra.sweeper.sampler.name=bayes: choose one of tpe, random, cmaes"):
        studies.make_sampler({"name": "bayes"})
    with pytest.raises(ConfigError, match=r"hydra.sweeper.pruner \(median\): .*n_startup"):
        studies.make_pruner({"name": "median", "n_startup": 3})
    # a resumed study's sampler starts elsewhere: the seed moves on by the trials the study has
    space = {"x": FloatDistribution(0, 1)}
    first = optuna.create_study(sampler=studies.make_sampler({"name": "random", "seed": 0}))
    later = optuna.create_study(sampler=studies.make_sampler({"name": "random", "seed": 0}, offset=4))
    assert first.ask(space).params != later.ask(space).params


def _sweeper_node(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), **VERSION_BASE):
        cfg = compose("config", overrides=["hydra.mode=MULTIRUN", *overrides], return_hydra_config=True)
    return OmegaConf.to_container(cfg.hydra.sweeper, resolve=True)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_sampler_and_pruner_composes_with_every_preset(preset: str) -> None:
    """Issue #28: `hydra/sweeper/sampler=random` failed on a preset (`Key 'n_startup_trials' not in ...`)."""
    base = _sweeper_node(f"hydra/sweeper={preset}")
    assert base["sampler"]["name"] == "tpe" and base["pruner"]["name"] == "none"
    for sampler in SAMPLERS:
        node = _sweeper_node(f"hydra/sweeper={preset}", f"hydra/sweeper/sampler={sampler}")
        assert node["sampler"]["name"] == sampler and node["params"] == base["params"]
        assert type(studies.make_sampler(node["sampler"])).__name__ == studies.SAMPLERS[sampler]
    for pruner in PRUNERS:
        node = _sweeper_node(
            f"hydra/sweeper={preset}", f"hydra/sweeper/pruner={pruner}", "hydra/sweeper/sampler=random"
        )
        assert node["pruner"]["name"] == pruner and node["sampler"]["name"] == "random"
        assert type(studies.make_pruner(node["pruner"])).__name__ == studies.PRUNERS[pruner]
    if base["params"]:
        studies.search_space(base["params"], [])  # the preset's space parses


def test_aggregate_of_seeds() -> None:
    assert seeds_value([1.0, 2.0, 6.0], "mean") == 3.0
    assert seeds_value([0.0, 1.0, 2.0, 100.0], "iqm") == 1.5  # the outer quarters dropped
    assert math.isnan(seeds_value([], "mean"))
    with pytest.raises(ConfigError, match=r"hpo.aggregate=median: choose one of mean, iqm"):
        studies.check_aggregate("median")


# ------------------------------------------------------------------------------------------------ states


def test_a_pruned_job_is_a_pruned_trial_and_its_run_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = compose_run("hydra.mode=MULTIRUN", "hydra/sweeper=tpe")
    with pytest.raises(RunPruned) as raised:
        job_result(cfg, {"status": "pruned", "pruned_at": 512, "run_dir": "x"})
    back = pickle.loads(pickle.dumps(raised.value))  # comes back from a joblib / Ray / submitit worker
    assert back.step == 512 and str(back) == "x: pruned after the evaluation at 512 env steps"
    run = RunDir(tmp_path)
    run.checkpoints.mkdir(parents=True)
    pruned = HeldRun({"status": "pruned"}, {})
    assert decide(run, pruned, backend="lit", budget=1024, force=False).action == "skip"
    # force=true continues a pruned run from its checkpoint (a completed one it would start again)
    monkeypatch.setattr(run_train, "resume_point", lambda run_dir, backend, batched=False: 512)
    assert decide(run, pruned, backend="lit", budget=1024, force=True) == Start("resume", 512)
    assert decide(run, HeldRun({"status": "completed"}, {}), backend="lit", budget=1024, force=True).action == "fresh"


def test_the_study_files_list_every_state(tmp_path: Path) -> None:
    study = optuna.create_study(study_name="s/ppo/CartPole", direction="maximize")
    dist = {
        "algo.learning_rate": FloatDistribution(1e-4, 1e-2, log=True),
        "algo.gamma": CategoricalDistribution([0.9, 0.99]),
    }
    run = tmp_path / "ppo" / "CartPole" / "v-1" / "seed_0"
    run.mkdir(parents=True)
    config = {"algo_name": "ppo", "env_name": "CartPole", "budget": 1024, "seed": 0, "algo": {"gamma": 0.99}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    for number, (state, value, lr) in enumerate(
        [
            (TrialState.COMPLETE, 90.0, 1e-3),
            (TrialState.PRUNED, 10.0, 5e-3),
            (TrialState.FAIL, None, 2e-3),
            (TrialState.COMPLETE, 120.0, 2e-4),
            (TrialState.COMPLETE, 60.0, 5e-4),
        ]
    ):
        study.add_trial(
            create_trial(
                state=state,
                value=value,
                params={"algo.learning_rate": lr, "algo.gamma": 0.99 if number % 2 else 0.9},
                distributions=dist,
                intermediate_values={256: (value or 0.0) / 2, 512: value or 0.0}
                if state != TrialState.PRUNED
                else {256: 10.0},
                user_attrs={"run_dirs": [str(run)], "seeds": [0], **({"pruned_at": 256} if number == 1 else {})},
            )
        )
    rows, found = write_results(study, tmp_path, url="mem", metric="final", how="mean")
    assert set(found) == {"algo.learning_rate", "algo.gamma"}
    rows = read_csv(tmp_path / "trials.csv")
    assert [r["state"] for r in rows] == ["completed", "pruned", "failed", "completed", "completed"]
    assert rows[1]["pruned_at"] == "256" and json.loads(rows[1]["intermediate_values"]) == {"256": 10.0}
    assert rows[3]["value"] == "120.0" and rows[3]["params_algo.learning_rate"] == "0.0002"
    best = yaml.safe_load((tmp_path / "best_trial.yaml").read_text())
    assert (best["trial"], best["value"], best["params"]["algo.gamma"]) == (3, 120.0, 0.99)
    tuned = (tmp_path / "best_ppo_CartPole.yaml").read_text()
    assert tuned.startswith("# @package _global_\n") and "# trial: 3" in tuned and "# budget: 1024" in tuned
    content = yaml.safe_load(tuned)
    # the tuned algo_env file the trial ran on (conf/algo_env/ppo_CartPole.yaml) with the trial's values on top
    assert content["algo"]["learning_rate"] == 2e-4 and content["algo"]["n_steps"] == 32
    assert content["env"] == {"n_envs": 8} and content["budget"] == 1024
    figures = plot_study(rows, found, "maximize", tmp_path / "report")
    assert [p.name for p in figures] == ["hpo_history.png", "hpo_importances.png", "hpo_intermediate.png"]
    assert plot_sweep(tmp_path, tmp_path / "again") == [tmp_path / "again" / p.name for p in figures]


# ------------------------------------------------------------------------------------------ whole sweeps


def test_pruning_stops_running_trials_and_keeps_their_checkpoint(tmp_path: Path) -> None:
    """Every evaluation is reported as it happens; the threshold pruner stops both trials after the evaluation at
    512 env steps (warm-up 500): pruned, not failed or completed; force=true continues one to its budget."""
    result = sweep(
        tmp_path,
        "hydra/sweeper=tpe",
        LR,
        "budget=1024",
        "hydra.sweeper.n_trials=2",
        "hydra.sweeper.n_jobs=1",
        "hydra/sweeper/pruner=threshold",
        "hydra.sweeper.pruner.lower=1e9",
        "hydra.sweeper.pruner.n_warmup_steps=500",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 pruned (2 runs)" in result.stdout and "pruned after the evaluation at 512 env steps" in result.stdout
    rows = trials(tmp_path)
    assert [r["state"] for r in rows] == ["pruned", "pruned"]
    for row in rows:
        assert json.loads(row["intermediate_values"]) == {
            "256": pytest.approx(float(read_csv(Path(row["run_dirs"]) / "eval.csv")[0]["mean_return"])),
            "512": pytest.approx(float(read_csv(Path(row["run_dirs"]) / "eval.csv")[1]["mean_return"])),
        }
        summary = summary_of(row["run_dirs"])
        assert (summary["status"], summary["pruned_at"], summary["timesteps"]) == ("pruned", 512, 512)
        assert (Path(row["run_dirs"]) / "checkpoints" / "last.ckpt").is_file()
    lr = float(rows[0]["params_algo.learning_rate"])
    again = run_py(*TINY, "budget=1024", f"algo.learning_rate={lr!r}", f"out_dir={tmp_path}", "sweep=hpo")
    assert "already completed" not in again.stdout and "PRUNED" in again.stdout  # a plain rerun: still pruned
    forced = run_py(
        *TINY, "budget=1024", f"algo.learning_rate={lr!r}", f"out_dir={tmp_path}", "sweep=hpo", "force=true"
    )
    assert forced.returncode == 0, forced.stdout + forced.stderr
    summary = summary_of(rows[0]["run_dirs"])
    assert (summary["status"], summary["resumed_from"], summary["timesteps"]) == ("completed", 512, 1024)
    assert [int(r["timesteps"]) for r in read_csv(Path(rows[0]["run_dirs"]) / "eval.csv")] == [256, 512, 768, 1024]


def test_a_failed_trial_is_failed_and_the_study_carries_on(tmp_path: Path) -> None:
    result = sweep(
        tmp_path,
        "hydra/sweeper=tpe",
        "algo.learning_rate=choice(1e30)",
        "hydra.sweeper.n_trials=1",
        "hydra.sweeper.n_jobs=1",
    )
    assert result.returncode == 1, result.stdout + result.stderr  # the sweep table reports the failure
    assert "1 failed (1 runs)" in result.stdout
    assert [r["state"] for r in trials(tmp_path)] == ["failed"]
    assert not (tmp_path / "hpo" / "best_trial.yaml").exists()


def _kill_when(args: list[str], done: Callable[[], bool], timeout: float = 300) -> None:
    process = subprocess.Popen(
        [sys.executable, "run.py", *args],
        cwd=REPO,
        env=CHILD_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not done():
            assert process.poll() is None, "the sweep ended before it could be killed"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait()


def test_a_killed_study_resumes_its_running_trial_and_trains_nothing_twice(tmp_path: Path) -> None:
    args = [
        "-m",
        *TINY,
        "budget=1024",
        f"out_dir={tmp_path}",
        "sweep=hpo",
        "hydra/launcher=basic",
        "hydra/sweeper=tpe",
        LR,
        "hydra.sweeper.n_trials=3",
        "hydra.sweeper.n_jobs=1",
    ]

    def second_trial_checkpointed() -> bool:
        runs = [p.parent.parent for p in (tmp_path / "hpo").glob("ppo/CartPole/*/seed_0/checkpoints/state.json")]
        return len(runs) == 2 and sum(summary_of(r)["status"] == "running" for r in runs) == 1

    _kill_when(args, second_trial_checkpointed)
    result = run_py(*args, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 trials finished, 1 to resume from their checkpoints, 1 new" in result.stdout
    assert "2 completed (2 runs)" in result.stdout  # this command ran the resumed trial and one new one
    rows = trials(tmp_path)
    assert [r["state"] for r in rows] == ["completed"] * 3
    run_dirs = [r["run_dirs"] for r in rows]
    assert len(set(run_dirs)) == 3
    resumed = summary_of(run_dirs[1])
    assert resumed["resumed_from"] and resumed["resumed_from"] >= 256  # continued from its checkpoint
    for run_dir in run_dirs:
        assert [int(r["timesteps"]) for r in read_csv(Path(run_dir) / "eval.csv")] == [256, 512, 768, 1024]
    again = run_py(*args)
    assert "3 trials finished, 0 to resume from their checkpoints, 0 new" in again.stdout, again.stdout
    assert len(trials(tmp_path)) == 3


def test_a_trial_over_seeds_reports_their_aggregate(tmp_path: Path) -> None:
    """hpo.seeds=2: one trial, two runs (seeds 0 and 1) in parallel (joblib); its value and its intermediate values
    are the mean."""
    result = sweep(
        tmp_path,
        "hydra/sweeper=tpe",
        LR,
        "hydra.sweeper.n_trials=1",
        "hydra.sweeper.n_jobs=1",
        "hpo.seeds=2",
        launcher="joblib",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (row,) = trials(tmp_path)
    run_dirs = row["run_dirs"].split(";")
    assert [Path(d).name for d in run_dirs] == ["seed_0", "seed_1"] and json.loads(row["seeds"]) == [0, 1]
    objectives = [summary_of(d)["objective"] for d in run_dirs]
    assert float(row["value"]) == pytest.approx(sum(objectives) / 2)
    curves = [read_csv(Path(d) / "eval.csv") for d in run_dirs]
    expected = {r0["timesteps"]: (float(r0["mean_return"]) + float(r1["mean_return"])) / 2 for r0, r1 in zip(*curves)}
    assert json.loads(row["intermediate_values"]) == pytest.approx(expected)
    best = yaml.safe_load((tmp_path / "hpo" / "best_trial.yaml").read_text())
    assert best["seeds"] == [0, 1] and best["aggregate"] == "mean" and best["seed_values"] == objectives


@pytest.mark.slow
@pytest.mark.parametrize(
    "launcher",
    [("slurm_local", "hydra_plugins.hydra_submitit_launcher"), ("ray_local", "hydra_plugins.hydra_ray_launcher")],
    ids=lambda x: x[0],
)
def test_trials_in_parallel_workers_report_prune_and_resume(tmp_path: Path, launcher: tuple[str, str]) -> None:
    """submitit (its local executor) and Ray: 4 trials, 2 at a time, each reporting from its worker process and
    pruned there (after the evaluation at 768 env steps); the same command again finds the study finished."""
    name, module = launcher
    pytest.importorskip(module, reason="needs `pip install -e .[cluster]`")
    args = [
        "hydra/sweeper=tpe",
        LR,
        "budget=1024",
        "hydra.sweeper.n_trials=4",
        "hydra.sweeper.n_jobs=2",
        "hydra/sweeper/pruner=threshold",
        "hydra.sweeper.pruner.lower=1e9",
        "hydra.sweeper.pruner.n_warmup_steps=700",
        *(["hydra.launcher.ray.init.address=local"] if name == "ray_local" else []),
    ]  # never a cluster found
    result = sweep(tmp_path, *args, launcher=name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 pruned (4 runs)" in result.stdout
    rows = trials(tmp_path)
    assert [r["state"] for r in rows] == ["pruned"] * 4 and {r["pruned_at"] for r in rows} == {"768"}
    for row in rows:
        assert list(json.loads(row["intermediate_values"])) == ["256", "512", "768"]
        assert summary_of(row["run_dirs"])["status"] == "pruned"
    again = sweep(tmp_path, *args, launcher=name)
    assert "4 trials finished, 0 to resume from their checkpoints, 0 new" in again.stdout, again.stdout


def test_a_trial_whose_config_already_ran_is_told_from_that_run(tmp_path: Path) -> None:
    """A trial that repeats a config with a completed run is told that run's result, without training it again."""
    plain = run_py(*TINY, "algo.learning_rate=0.001", f"out_dir={tmp_path}", "sweep=hpo")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    (run_dir,) = (tmp_path / "hpo").glob("ppo/CartPole/*/seed_0")
    trained = (run_dir / "eval.csv").stat().st_mtime_ns
    result = sweep(
        tmp_path,
        "hydra/sweeper=tpe",
        "algo.learning_rate=choice(0.001)",
        "hydra.sweeper.n_trials=1",
        "hydra.sweeper.n_jobs=1",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "already completed, skipped" in result.stdout
    (row,) = trials(tmp_path)
    assert row["state"] == "completed" and float(row["value"]) == summary_of(run_dir)["objective"]
    assert row["run_dirs"] == str(run_dir) and (run_dir / "eval.csv").stat().st_mtime_ns == trained
