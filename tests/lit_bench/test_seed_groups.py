"""#39: a sweep's seeds of one config in one process (``seeds_per_process``, lit_bench.control.seed_groups and
lit_bench.run.group): jobs grouped by their overrides, one result per seed back to the sweeper, every seed its own
run directory with the files and numbers of an ungrouped run, skipped when completed, stopped by a signal and
resumed exactly, the plan's grouped estimate and the one-line refusal of a bad value."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from lit_bench.config.checks import ConfigError
from lit_bench.config.identity import resolved, run_path
from lit_bench.control import cost_table, seed_groups
from lit_bench.control.run_plan import describe, make_plan
from lit_bench.control.seed_groups import Group, Member, SeedReturn, counted, expand, group_count, group_jobs
from lit_bench.control.sweep import RunFailed
from tests.lit_bench.helpers import REPO, compose_run, find_run, patience, read_csv, run_py
from tests.lit_bench.test_signals_stop import _interrupted, _start, _wait_for_checkpoint

pytestmark = pytest.mark.harness
TINY = ("algo=ppo", "env=CartPole", "env.n_envs=8", "algo.n_steps=32", "budget=512", "eval.every=256")

# ------------------------------------------------------------------------------------------ grouping (pure)


def _jobs(*configs: str, seeds: range = range(3)) -> list[list[str]]:
    """One job per config and seed, in the basic sweeper's order (the seed varying fastest)."""
    return [[f"algo={algo}", f"seed={seed}", "out_dir=x"] for algo in configs for seed in seeds]


def test_jobs_that_differ_only_in_seed_are_one_group_carrying_their_seeds_and_job_numbers() -> None:
    groups = group_jobs(_jobs("ppo", "a2c"), 10, lambda members: counted(members, 1))
    assert [[m.num for m in g.members] for g in groups] == [[10, 11, 12], [13, 14, 15]]
    assert groups[1].overrides == ["algo=a2c", "seed=0", "out_dir=x", "seed_group={seeds:[0,1,2],jobs:[13,14,15]}"]
    assert groups[1].members[2] == Member(seed=2, num=15, overrides=("algo=a2c", "seed=2", "out_dir=x"))


def test_a_configs_seeds_split_into_the_groups_asked_for_and_ungroupable_jobs_stay_alone() -> None:
    jobs = [*_jobs("ppo", seeds=range(5)), ["algo=ppo", "seed=abc"], ["algo=dqn"], ["algo=ppo", "seed=1", "out_dir=x"]]
    groups = group_jobs(jobs, 0, lambda members: counted(members, 2))
    assert [[m.num for m in g.members] for g in groups] == [[0, 1, 2], [3, 4], [5], [6], [7]]
    assert groups[2].overrides == ["algo=ppo", "seed=abc"]  # as it was: the job reports its bad seed itself
    assert groups[4].overrides == ["algo=ppo", "seed=1", "out_dir=x", "seed_group={seeds:[1],jobs:[7]}"]  # twice


@pytest.mark.parametrize(
    ("setting", "seeds", "at_once", "batchable", "groups"),
    [
        (1, 10, 2, True, 10),
        (3, 10, 2, True, 4),
        (3, 2, 2, True, 1),
        ("auto", 10, 2, True, 2),  # auto: as many groups as jobs run at once...
        ("auto", 10, 16, True, 5),  # ... each of 2 seeds or more
        ("auto", 3, 2, True, 1),
        ("auto", 10, None, True, 1),  # (a launcher that does not say: one group)
        ("auto", 1, 2, True, 1),
        ("auto", 10, 2, False, 10),  # not batchable: one process per seed
    ],
)
def test_how_many_groups_a_configs_seeds_make(
    setting: int | str, seeds: int, at_once: int | None, batchable: bool, groups: int
) -> None:
    assert group_count(setting, seeds, at_once, batchable) == groups


@pytest.mark.parametrize("value", [0, -1, "two", 1.5, True, None])
def test_a_bad_seeds_per_process_is_one_line_naming_the_key_and_the_choices(value: Any) -> None:
    with pytest.raises(ConfigError) as error:
        seeds_per_process_of(value)
    assert (
        str(error.value)
        == f"seeds_per_process={value}: one of auto, 1 (one process per seed), 2, 3, ... (seeds per process)"
    )


def seeds_per_process_of(value: Any) -> int | str:
    return seed_groups.seeds_per_process(value)


def _result(value: Any, status: JobStatus = JobStatus.COMPLETED, overrides: list[str] | None = None) -> JobReturn:
    """A job's result as a launcher hands it back."""
    hydra = OmegaConf.create({"hydra": {"job": {"num": 0}, "overrides": {"task": []}, "runtime": {"output_dir": "g"}}})
    return JobReturn(
        overrides=overrides or [],
        cfg=OmegaConf.create({"seed": 0}),
        hydra_cfg=hydra,
        status=status,
        _return_value=value,
    )


def test_a_groups_result_comes_back_as_one_result_per_seed_in_the_jobs_order() -> None:
    jobs = [["seed=0", "algo=ppo"], ["seed=0", "algo=a2c"], ["seed=1", "algo=ppo"], ["seed=2", "algo=ppo"]]
    groups = group_jobs(jobs, 0, lambda members: counted(members, 1))
    assert [len(g.members) for g in groups] == [3, 1]
    failed = RunFailed("seed_2: boom")
    seed_returns = [SeedReturn(0, "runs/seed_0", "COMPLETED", 1.5), SeedReturn(3, "runs/seed_2", "FAILED", failed)]
    alone = [SeedReturn(1, "runs/a2c/seed_0", "COMPLETED", 7.0)]  # a group of one: under its own job number
    returns = expand(groups, [_result(seed_returns), _result(alone)])
    assert [r.overrides for r in returns] == jobs
    assert [r.status for r in returns] == [
        JobStatus.COMPLETED,
        JobStatus.COMPLETED,
        JobStatus.COMPLETED,
        JobStatus.FAILED,
    ]
    assert [r._return_value for r in returns[:3]] == [1.5, 7.0, None]  # seed 1 did not start (a signal)
    assert returns[3]._return_value is failed
    assert returns[3].hydra_cfg.hydra.runtime.output_dir == "runs/seed_2"  # the Optuna sweeper's run_dirs
    assert returns[3].hydra_cfg.hydra.job.num == 3 and returns[3].cfg.seed == 2


def test_a_group_that_failed_as_a_whole_fails_each_of_its_seeds() -> None:
    group = Group((Member(0, 0, ("seed=0",)), Member(1, 1, ("seed=1",))))
    error = RunFailed("its worker died")
    returns = expand([group], [_result(error, JobStatus.FAILED)])
    assert [(r.overrides, r.status, r._return_value) for r in returns] == [
        (["seed=0"], JobStatus.FAILED, error),
        (["seed=1"], JobStatus.FAILED, error),
    ]


def test_seeds_per_process_1_launches_the_jobs_as_they_are() -> None:
    launched: list[Any] = []
    launcher = SimpleNamespace(config=OmegaConf.create({"seeds_per_process": 1}))
    jobs = _jobs("ppo")
    seed_groups.launch(launcher, jobs, 4, lambda overrides, idx: launched.append((overrides, idx)) or [])
    assert launched == [(jobs, 4)]


def test_every_job_of_a_grouped_launch_keeps_its_own_job_number() -> None:
    """A launcher numbers the jobs it is given by their place: a group of one carries its number, as a group does,
    and a job that cannot be grouped (a bad seed) is launched on its own under its number."""
    launched: list[tuple[list[list[str]], int]] = []

    def dispatch(jobs: Any, idx: int) -> list[JobReturn]:
        launched.append(([list(j) for j in jobs], idx))
        return [_result(None, overrides=list(j)) for j in jobs]

    loader = SimpleNamespace(load_sweep_config=lambda config, overrides: OmegaConf.create({"trainer": {"devices": 1}}))
    launcher = SimpleNamespace(
        config=OmegaConf.create({"seeds_per_process": 2}), hydra_context=SimpleNamespace(config_loader=loader)
    )
    jobs = [*_jobs("ppo"), ["algo=ppo", "seed=abc", "out_dir=x"]]
    returns = seed_groups.launch(launcher, jobs, 10, dispatch)
    assert [o[-1] for o in launched[0][0]] == [
        "seed_group={seeds:[0,1],jobs:[10,11]}",
        "seed_group={seeds:[2],jobs:[12]}",
    ]
    assert launched[0][1] == 10 and launched[1] == ([jobs[3]], 13)
    assert [r.overrides for r in returns] == jobs


# ------------------------------------------------------------------------------------------ auto (the default)


def _auto_launch(jobs: list[list[str]], n_jobs: int = 2) -> list[list[str]]:
    """The jobs ``seeds_per_process=auto`` launches for ``jobs`` under joblib with ``n_jobs`` (their overrides)."""
    launched: list[list[str]] = []

    def dispatch(batch: Any, idx: int) -> list[JobReturn]:
        launched.extend(list(j) for j in batch)
        return [_result(None, overrides=list(j)) for j in batch]

    target = "hydra_plugins.lit_bench_launchers.joblib_launcher.JoblibLauncher"
    launcher = SimpleNamespace(
        config=OmegaConf.create(
            {"seeds_per_process": "auto", "hydra": {"launcher": {"_target_": target, "n_jobs": n_jobs}}}
        ),
        hydra_context=SimpleNamespace(config_loader=SimpleNamespace(load_sweep_config=lambda c, o: compose_run(*o))),
    )
    seed_groups.launch(launcher, jobs, 0, dispatch)
    return launched


def _groups_of(launched: list[list[str]]) -> list[str]:
    return [o[-1].removeprefix("seed_group=") if o[-1].startswith("seed_group=") else "-" for o in launched]


def test_auto_groups_a_batchable_configs_seeds_over_the_jobs_run_at_once(tmp_path: Path) -> None:
    """PPO's seeds (lit) in as many batched groups as joblib runs jobs at once, each of 2 seeds or more; SB3's and
    TRPO's (refused from the config alone) one job per seed."""
    out = f"out_dir={tmp_path}"
    ppo = [[*TINY, f"seed={seed}", out] for seed in range(5)]
    sb3 = [[*TINY, "backend=sb3", f"seed={seed}", out] for seed in range(2)]
    trpo = [["algo=trpo", f"seed={seed}", out] for seed in range(2)]
    assert _groups_of(_auto_launch([*ppo, *sb3, *trpo])) == [
        "{seeds:[0,1,2],jobs:[0,1,2],batched:true}",
        "{seeds:[3,4],jobs:[3,4],batched:true}",
        "{seeds:[0],jobs:[5]}",
        "{seeds:[1],jobs:[6]}",
        "{seeds:[0],jobs:[7]}",
        "{seeds:[1],jobs:[8]}",
    ]
    assert _groups_of(_auto_launch(ppo, n_jobs=1)) == ["{seeds:[0,1,2,3,4],jobs:[0,1,2,3,4],batched:true}"]
    assert len(_auto_launch(ppo, n_jobs=16)) == 2  # 16 at once, but groups of 2 seeds at least
    assert _groups_of(_auto_launch(sb3)) == ["-", "-"]  # nothing grouped: the jobs as they were
    assert _groups_of(_auto_launch([[*TINY, f"seed={seed}", out, "parity=true"] for seed in range(2)])) == ["-", "-"]


def test_the_jobs_each_launcher_runs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """joblib: n_jobs (-1: the cores); submitit's local executor: the cores; SLURM: array_parallelism; Ray: the
    cluster's CPUs over each job's num_cpus (read from the cluster); the basic launcher: none (never grouped)."""
    from hydra_plugins.lit_bench_launchers.ray_launcher import RayLauncher

    def at_once(target: str, **params: Any) -> int | None:
        return seed_groups.jobs_at_once(OmegaConf.create({"_target_": target, **params}))

    import joblib

    lit_joblib = "hydra_plugins.lit_bench_launchers.joblib_launcher.JoblibLauncher"
    assert at_once(lit_joblib, n_jobs=3) == 3 and at_once(lit_joblib, n_jobs=-1) == joblib.cpu_count()
    assert at_once("hydra_plugins.lit_bench_launchers.submitit_launcher.LocalLauncher") == os.cpu_count()
    assert at_once("hydra_plugins.lit_bench_launchers.submitit_launcher.SlurmLauncher", array_parallelism=7) == 7
    assert at_once("hydra._internal.core_plugins.basic_launcher.BasicLauncher") is None
    util = SimpleNamespace(start_ray=lambda init: None)
    ray = SimpleNamespace(cluster_resources=lambda: {"CPU": 8.0})
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "hydra_plugins.hydra_ray_launcher", SimpleNamespace(_launcher_util=util))
    monkeypatch.setitem(sys.modules, "hydra_plugins.hydra_ray_launcher._launcher_util", util)
    launcher = RayLauncher(ray=OmegaConf.create({"init": {}, "remote": {"num_cpus": 2}}))
    assert launcher.jobs_at_once() == 4


def _existing(tmp_path: Path, seed: int, batched: bool, status: str = "completed") -> Path:
    """A run directory of TINY's ``seed`` (ordinary or batched) holding a summary, as a run leaves it."""
    cfg = compose_run(*TINY, f"seed={seed}", f"out_dir={tmp_path}", *(["batched=true"] if batched else []))
    run_dir = run_path(resolved(cfg))
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text(json.dumps({"status": status}))
    return run_dir


def test_under_auto_a_seed_keeps_the_kind_of_the_run_it_has(tmp_path: Path) -> None:
    """Seeds with an ordinary run (completed, failed, resumable) keep their own process, never retrained batched;
    the others are grouped; a seed alone with a batched run trains batched (a group of one) to skip or resume it."""
    _existing(tmp_path, 0, batched=False)
    _existing(tmp_path, 1, batched=False, status="failed")
    (_existing(tmp_path, 2, batched=False, status="running") / "checkpoints").mkdir()
    _existing(tmp_path, 5, batched=True, status="running")
    jobs = [[*TINY, f"seed={seed}", f"out_dir={tmp_path}"] for seed in range(6)]
    assert _groups_of(_auto_launch(jobs)) == [
        "{seeds:[0],jobs:[0]}",
        "{seeds:[1],jobs:[1]}",
        "{seeds:[2],jobs:[2]}",
        "{seeds:[3,4,5],jobs:[3,4,5],batched:true}",
    ]
    assert _groups_of(_auto_launch([jobs[5]])) == ["{seeds:[5],jobs:[0],batched:true}"]
    assert _groups_of(_auto_launch([jobs[4]])) == ["-"]  # a seed alone with no run: its own process
    assert _groups_of(_auto_launch(jobs[1:4])) == ["-", "-", "-"]  # (3 alone, without the others: its own too)
    assert _groups_of(_auto_launch(jobs[:2])) == ["-", "-"]  # every seed with an ordinary run


def test_autos_decision_imports_no_torch_lightning_or_sb3() -> None:
    """The launching process decides from the config alone: ``launch`` under auto (a batchable config and a
    refused one) leaves torch, Lightning and SB3 unimported."""
    code = f"""
import sys
from types import SimpleNamespace
from omegaconf import OmegaConf
from hydra.core.utils import JobReturn, JobStatus
from tests.lit_bench.helpers import compose_run
from lit_bench.control import cost_table, seed_groups, suite_plan
import hydra_plugins.lit_bench_launchers.joblib_launcher
launched = []
def dispatch(batch, idx):
    launched.extend(batch)
    return [JobReturn(overrides=list(j), status=JobStatus.COMPLETED, _return_value=[]) for j in batch]
joblib = {{"_target_": "joblib", "n_jobs": 2}}
launcher = SimpleNamespace(
    config=OmegaConf.create({{"seeds_per_process": "auto", "hydra": {{"launcher": joblib}}}}),
    hydra_context=SimpleNamespace(config_loader=SimpleNamespace(load_sweep_config=lambda c, o: compose_run(*o))),
)
jobs = [[*{list(TINY)!r}, f"seed={{s}}", "out_dir=/nonexistent"] for s in range(4)]
jobs += [[*{list(TINY)!r}, "backend=sb3", f"seed={{s}}", "out_dir=/nonexistent"] for s in range(2)]
seed_groups.launch(launcher, jobs, 0, dispatch)
assert sum("batched:true" in j[-1] for j in launched) == 2, launched
print(sorted(m for m in ("torch", "lightning", "stable_baselines3", "lit_sb3") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=patience(120))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


# ------------------------------------------------------------------------------------------ the plan


def test_the_plan_prints_the_grouped_estimate_beside_todays() -> None:
    args = ["-m", "algo=ppo,a2c", "env=CartPole", "seed=0,1,2", "hydra.launcher.n_jobs=2"]
    plan = make_plan([*args, "seeds_per_process=3"])
    assert plan is not None and plan.runs == 6 and plan.jobs == 2
    one_after_another = make_plan([*args, "seeds_per_process=3", "backend=sb3"])  # (sb3's runs never batch)
    assert one_after_another is not None and one_after_another.jobs == 2
    cost = one_after_another.grouped()
    assert cost.cpu_s == pytest.approx(one_after_another.cpu_s)  # the same training
    assert cost.startup_saved_s == 0.0  # joblib reuses its 2 workers either way
    assert cost.wall_s is not None and cost.wall_s >= one_after_another.wall_s()  # 2 jobs of 3 runs
    text = describe(plan)
    assert "grouped (seeds_per_process=3): 6 runs in 2 jobs, seeds one after another in each job, or as one" in text
    auto = describe(make_plan(args))  # the default: each config's 3 seeds in one batched group (2 jobs at once)
    assert "grouped (seeds_per_process=auto): 6 runs in 2 jobs, a config's seeds as one batched model" in auto
    refused = describe(make_plan([*args, "backend=sb3"]))
    assert "seeds_per_process=auto: one job per run (auto groups only the seeds of a config that train as" in refused
    assert "grouped" not in describe(make_plan([*args, "seeds_per_process=1"]))


def test_a_cluster_saves_a_processs_start_up_per_seed() -> None:
    plan = make_plan(["-m", "algo=ppo", "env=CartPole", "seed=0,1,2,3", "seeds_per_process=2", "hydra/launcher=ray"])
    assert plan is not None and plan.jobs == 2
    assert plan.grouped().startup_saved_s == pytest.approx(2 * seed_groups.STARTUP_CPU_S)


def test_a_bad_seeds_per_process_refuses_the_command_in_one_line(tmp_path: Path) -> None:
    done = run_py("-m", *TINY, "seed=0,1", "seeds_per_process=many", f"out_dir={tmp_path}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "Error: seeds_per_process=many: one of auto, 1 (one process per seed), 2, 3, ... (seeds per process)"
    )
    assert not any(tmp_path.iterdir())


# ------------------------------------------------------------------------------------------ sweeps (run.py)


def _one_after_another(run_dirs: list[Path | None]) -> None:
    """One process trained them: each run started when the one before had ended (a pool would start them at once)."""
    summaries = [json.loads((d / "summary.json").read_text()) for d in run_dirs if d is not None]
    for before, after in itertools.pairwise(summaries):
        assert after["started_at"] >= before["finished_at"], (before, after)


def _own_overrides(run_dir: Path) -> list[str]:
    listed = yaml.safe_load((run_dir / "overrides.yaml").read_text())
    return [o for o in listed if not o.startswith(("out_dir=", "seeds_per_process="))]


def _files(run_dir: Path) -> set[str]:
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()}


def _numbers(run_dir: Path) -> list[tuple[str, ...]]:
    """eval.csv without its clock columns."""
    return [
        (r["timesteps"], r["mean_return"], r["std_return"], r["mean_ep_length"]) for r in read_csv(run_dir / "eval.csv")
    ]


def test_a_grouped_joblib_sweep_writes_the_run_directories_of_an_ungrouped_one(tmp_path: Path) -> None:
    """3 seeds in one process: 3 run directories, the same files and numbers as one process per seed; a rerun
    skips them."""
    runs = {}
    for setting in (3, 1):  # (sb3: not batched, so its seeds train one after another in the group's process)
        done = run_py(
            "-m", *TINY, "backend=sb3", "seed=0,1,2", f"seeds_per_process={setting}",
            f"out_dir={tmp_path / str(setting)}", "sweep=s", "hydra.launcher.n_jobs=2",
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "3 completed (3 runs)" in done.stdout
        runs[setting] = [find_run(tmp_path / str(setting) / "s", seed) for seed in range(3)]
        if setting == 3:
            _one_after_another(runs[3])
    for grouped, alone in zip(runs[3], runs[1]):
        assert grouped is not None and alone is not None
        assert _files(grouped) == _files(alone)
        assert _numbers(grouped) == _numbers(alone)
        ours, theirs = (json.loads((d / "summary.json").read_text()) for d in (grouped, alone))
        assert ours["status"] == "completed" and ours["config_id"] == theirs["config_id"]
        assert ours["final_mean_return"] == theirs["final_mean_return"]
        assert _own_overrides(grouped) == _own_overrides(alone)  # the seed's own job's: no seed_group
    records = [json.loads(line) for p in (tmp_path / "3" / "s" / ".invocations").glob("*.jsonl") for line in p.open()]
    assert sorted((r["seed"], r["job"]) for r in records) == [(0, 0), (1, 1), (2, 2)]  # one record per seed
    again = run_py(
        "-m", *TINY, "backend=sb3", "seed=0,1,2", "seeds_per_process=3", f"out_dir={tmp_path / '3'}", "sweep=s",
    )  # fmt: skip
    assert again.returncode == 0 and again.stdout.count("already completed, skipped") == 3, again.stdout + again.stderr


def test_sigterm_stops_a_grouped_run_at_a_checkpoint_and_the_rerun_resumes_it_exactly(tmp_path: Path) -> None:
    """The seed in training is checkpointed and ``interrupted``, the one after it does not start; rerunning the
    command resumes the first to the numbers of an uninterrupted run and trains the second."""
    args = ["-m", "algo=trpo", TINY[1], "env.n_envs=1", "algo.n_steps=64", "algo.batch_size=64"]
    args += ["eval.every=320", "eval.episodes=2", "budget=3200", "seed=0,1", "seeds_per_process=2"]
    args += [f"out_dir={tmp_path}", "sweep=g"]  # (TRPO: not batched; test_batched has the batched group's)
    process = _start(args)
    [seed_0] = _wait_for_checkpoint(process, tmp_path / "g" / "trpo" / "CartPole" / "seed_0")
    os.kill(process.pid, signal.SIGTERM)
    output, _ = process.communicate(timeout=patience(180))
    assert process.returncode == 143, output
    assert "Traceback" not in output and "1 interrupted (1 runs)" in output and "sweep stopped by SIGTERM" in output
    step = _interrupted(seed_0, "SIGTERM")
    assert not (seed_0.parent / "seed_1" / "summary.json").exists()  # not started
    again = run_py(*args)
    assert again.returncode == 0 and "2 completed (2 runs)" in again.stdout, again.stdout + again.stderr
    summary = json.loads((seed_0 / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["resumed_from"] == step
    alone = run_py(*[a for a in args[1:] if not a.startswith(("seed=", "seeds_per", "out_dir"))], "seed=0",
                   f"out_dir={tmp_path / 'alone'}")  # fmt: skip
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert _numbers(seed_0) == _numbers(find_run(tmp_path / "alone" / "g", 0))


def test_an_optuna_trials_seeds_train_in_one_process(tmp_path: Path) -> None:
    """hpo.seeds=2 under the default seeds_per_process=auto: the trial's two runs are one job (one batched group);
    the study gets both seeds' values."""
    done = run_py(
        "-m", *TINY, f"out_dir={tmp_path}", "sweep=hpo", "hydra/launcher=lit_joblib", "hydra/sweeper=tpe",
        "algo.learning_rate=tag(log, interval(1e-4, 1e-2))", "hydra.sweeper.n_trials=1", "hydra.sweeper.n_jobs=1",
        "hpo.seeds=2", timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = read_csv(tmp_path / "hpo" / "trials.csv")
    run_dirs = row["run_dirs"].split(";")
    assert [Path(d).name for d in run_dirs] == ["seed_0", "seed_1"] and row["state"] == "completed"
    assert all("batched=true" in Path(d).parent.name for d in run_dirs)  # trained as one model
    objectives = [json.loads((Path(d) / "summary.json").read_text())["objective"] for d in run_dirs]
    assert float(row["value"]) == pytest.approx(sum(objectives) / 2)


def test_a_lost_group_is_recorded_seed_by_seed_as_their_own_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group's process that died (its worker killed, its SLURM job cancelled): each seed a failed job of its own,
    under its own job number and overrides, unless it recorded its own end."""
    from hydra_plugins.lit_bench_launchers.lost_jobs import lost_job
    from lit_bench.control.sweep import INVOCATION_ENV, read_records, record

    monkeypatch.setenv(INVOCATION_ENV, "lost")
    overrides = [*TINY, "seed=0", f"out_dir={tmp_path}", "sweep=s", "seed_group={seeds:[0,1],jobs:[4,5]}"]
    job_config = compose_run(*overrides)
    sweep_dir = tmp_path / "s"
    record(sweep_dir, "lost", {"seed": 0, "status": "interrupted", "job": 4})  # seed 0 recorded its own end
    result = lost_job(sweep_dir, job_config, overrides, "its worker died")
    assert math.isnan(result._return_value)  # Hydra's basic sweeper: NaN, as for a job of one seed
    records = {r["job"]: r for r in read_records(sweep_dir, "lost")}
    assert records[4]["status"] == "interrupted"
    assert records[5]["status"] == "failed" and records[5]["seed"] == 1 and records[5]["error"] == "its worker died"
    assert records[5]["job_overrides"] == [*TINY, "seed=1", f"out_dir={tmp_path}", "sweep=s"]
    assert records[5]["run_dir"].endswith("seed_1")


def test_regress_dry_run_prints_the_grouped_estimate(capsys: pytest.CaptureFixture) -> None:
    from lit_bench.cli.regression.suites import dry_run, load_suite

    dry_run(load_suite("zoo_classic"), None)
    out = capsys.readouterr().out
    found = re.search(r"total, one process per seed: \d+ multiruns, (\d+) runs", out)
    assert found is not None, out
    runs = int(found.group(1))
    grouped = re.search(r"total, grouped \(seeds_per_process=auto, the default\): (\d+) jobs for (\d+) runs", out)
    assert grouped is not None and int(grouped.group(2)) == runs
    assert int(grouped.group(1)) < runs  # the batched configs' seeds in groups (ppo, a2c, dqn, sac, td3, ddpg)
    assert "algo=trpo env=Acrobot,CartPole,MountainCar,Pendulum budget=100000: 20 runs" in out  # (not batched)


@pytest.mark.slow
def test_a_grouped_submitit_sweep_lists_every_seed_under_its_own_job(tmp_path: Path) -> None:
    """submitit's local executor (the SLURM code path): 3 seeds in 2 jobs, 3 rows (a group of one keeps its job)."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    done = run_py(
        "-m", *TINY, "seed=0,1,2", "seeds_per_process=2", "hydra/launcher=slurm_local", f"out_dir={tmp_path}",
        "sweep=s", timeout=600,
    )  # fmt: skip
    assert done.returncode == 0 and "3 completed (3 runs)" in done.stdout, done.stdout + done.stderr
    runs = [find_run(tmp_path / "s", seed) for seed in range(3)]
    _one_after_another(runs[:2])


@pytest.fixture
def td3_classic_unpaid(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost table with td3's classic-control groups at 1.25x their CPU alone (what they measured before the fused
    per-seed Adam), so that these tests check auto's rule whatever the committed table measures today."""
    rows = cost_table.group_cost_rows()
    rows[("td3", "classic")] = {
        size: {**row, "cpu_s_per_step": str(1.25 * float(row["alone_cpu_s_per_step"]))}
        for size, row in rows[("td3", "classic")].items()
    }
    monkeypatch.setattr(cost_table, "group_cost_rows", lambda path=cost_table.COSTS: rows)


@pytest.mark.usefixtures("td3_classic_unpaid")
def test_auto_does_not_batch_a_config_whose_group_does_not_pay() -> None:
    """td3's classic groups at 1.25x their CPU alone: auto trains them one process per seed and the plan says why;
    dqn's measured below AUTO_MAX_RATIO: batched."""
    args = ["-m", "seed=0,1,2,3,4,5,6,7,8,9", "hydra.launcher.n_jobs=2"]
    td3 = make_plan(["algo=td3", "env=MountainCarContinuous", *args])
    assert td3 is not None and td3.jobs == td3.runs == 10 and not td3.configs[0].batched
    text = describe(td3)
    assert "one process per seed: a seed of td3 in a batched group costs 1.25x its CPU alone" in text
    assert "auto batches at 0.9x or less" in text and "where the group pays" in text
    dqn = make_plan(["algo=dqn", "env=CartPole", *args])
    assert dqn is not None and dqn.jobs == 2 and dqn.configs[0].unpaid is None
    forced = make_plan(["algo=td3", "env=MountainCarContinuous", *args, "seeds_per_process=5"])
    assert forced is not None and forced.jobs == 2  # a number still groups: auto's rule only


@pytest.mark.usefixtures("td3_classic_unpaid")
def test_an_unmeasured_family_is_modelled_from_the_algorithms_measured_ones() -> None:
    ratios = cost_table.group_ratios()
    td3 = sorted(by_size[min(by_size)] for (algo, _), by_size in ratios.items() if algo == "td3")
    assert len(td3) >= 2 and all(r > seed_groups.AUTO_MAX_RATIO for r in td3)  # (the table this test reads)
    reason = seed_groups.unpaid_group("td3", "no-such-env", 5)
    assert reason is not None and "modelled: the median over td3's measured env families" in reason
    assert seed_groups.unpaid_group("no-such-algo", "CartPole", 5) is None  # nothing known: auto batches


def test_a_joblib_sweep_says_why_its_groups_save_no_start_up() -> None:
    plan = make_plan(["-m", "algo=dqn", "env=CartPole", "seed=0,1,2,3,4,5,6,7,8,9", "hydra.launcher.n_jobs=2"])
    assert plan is not None and plan.jobs == 2 and plan.grouped().startup_saved_s == 0.0
    assert "no start-up saved: joblib starts its 2 worker processes either way and reuses them" in describe(plan)
