"""#31 without a cluster: the sweep table of requeued jobs, the launchers' configs, a suite's plan (--dry-run) and
its scaled-down budgets (--scale). The real clusters are exercised in test_launchers.py (marker ``cluster``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from hydra_plugins.lit_bench_launchers import submitit_launcher
from lit_bench.cli import regress
from lit_bench.cli.regression import suites
from lit_bench.control import cost_table, suite_plan, sweep
from tests.lit_bench.helpers import compose_run

pytestmark = pytest.mark.harness


def _record(sweep_dir: Path, invocation: str, job: int, status: str, seed: int) -> None:
    sweep.record(
        sweep_dir,
        invocation,
        {
            "algo": "ppo",
            "env": "CartPole",
            "seed": seed,
            "backend": "lit",
            "status": status,
            "job": job,
            "run_dir": f"r{seed}",
        },
    )


def test_a_requeued_job_is_one_row_with_its_last_attempt(tmp_path: Path) -> None:
    """SLURM requeues a job after its time limit: every attempt appends its outcome; the table lists the job once."""
    for status in ("interrupted", "interrupted", "completed"):
        _record(tmp_path, "inv", 0, status, seed=0)
    _record(tmp_path, "inv", 1, "completed", seed=1)
    records = sweep.read_records(tmp_path, "inv")
    assert [(r["job"], r["status"]) for r in records] == [(0, "completed"), (1, "completed")]
    assert sweep.table(records).endswith("2 completed (2 runs)")


def test_records_without_a_job_number_are_each_a_job(tmp_path: Path) -> None:
    """Records written before job numbers were recorded (older sweeps) keep one row each."""
    path = sweep.records_dir(tmp_path) / "old.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps({"seed": s, "status": "completed"}) + "\n" for s in (0, 0)))
    assert len(sweep.read_records(tmp_path, "old")) == 2


@pytest.mark.parametrize(
    ("launcher", "target"),
    [
        ("ray", "hydra_plugins.lit_bench_launchers.ray_launcher.RayLauncher"),
        ("ray_local", "hydra_plugins.lit_bench_launchers.ray_launcher.RayLauncher"),
        ("slurm", "hydra_plugins.lit_bench_launchers.submitit_launcher.SlurmLauncher"),
        ("slurm_local", "hydra_plugins.lit_bench_launchers.submitit_launcher.LocalLauncher"),
    ],
)
def test_cluster_launchers_are_the_projects(launcher: str, target: str) -> None:
    assert compose_run(f"hydra/launcher={launcher}").hydra.launcher._target_ == target


def test_ray_launcher_joins_a_cluster_by_address_without_an_object_store_size() -> None:
    """Ray refuses an object store size when joining a running cluster; hydra-ray-launcher sets one unless given."""
    init = compose_run("hydra/launcher=ray", "hydra.launcher.ray.init.address=10.0.0.1:6379").hydra.launcher.ray.init
    assert init.address == "10.0.0.1:6379" and "object_store_memory" in init and init.object_store_memory is None


def _costs(
    path: Path, rows: list[tuple[str, str, float]], groups: tuple[tuple[str, str, int, float, float], ...] = ()
) -> Path:
    """A cost table: one process per seed (``rows``) and batched groups (``groups``: algo, family, size, a seed's
    cost in the group, one process per seed's beside it)."""
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["algo", "family", "env", "group_size", "cpu_s_per_step", "alone_cpu_s_per_step"])
        writer.writerows([(a, f, "-", "", c, "") for a, f, c in rows])
        writer.writerows([(a, f, "-", n, c, alone) for a, f, n, c, alone in groups])
    return path


# ppo's batched groups: a seed costs half its one process's in a group of 2 (or 3, 4), a fifth in a group of 5 or more
PPO_GROUPS = (("ppo", "classic", 5, 0.0004, 0.002), ("ppo", "classic", 2, 0.001, 0.002))


def test_plan_counts_runs_and_core_hours_from_measured_costs(tmp_path: Path) -> None:
    entries = suite_plan.scaled(
        [
            {"algo": "ppo", "env": "CartPole", "budget": 360_000},
            {"algo": "ppo", "env": "Acrobot", "budget": 360_000},
            {"algo": "sac", "env": "HalfCheetah", "budget": 1_000_000},
            {"algo": "tqc", "env": "Pong", "budget": 10_000},
        ],
        1.0,
    )
    costs = cost_table.costs(_costs(tmp_path / "c.csv", [("ppo", "classic", 0.001), ("sac", "mujoco", 0.0144)]))
    result = suite_plan.plan(entries, seeds=5, launcher="slurm", cost_table=costs, memory={}, group_table={})
    assert result["runs"] == 20 and len(result["multiruns"]) == 3  # ppo's two envs share one multirun
    # ppo: 2 envs x 5 seeds x 360k steps x 1 ms = 1 core-hour; sac: 5 x 1M x 14.4 ms = 20 core-hours
    assert result["core_hours"] == pytest.approx(21.0)
    assert result["unmeasured"] == ["tqc:Pong"] and result["longest_run_hours"] == pytest.approx(4.0)
    text = suite_plan.describe(result)
    assert "1 CPU, 8 GB, time limit 240 min" in text and "+1 entries without a measured cost: tqc:Pong" in text
    assert "0 requeues at a 240-minute limit" in text
    assert "on 1 node(s) of 32 cores: >= 4.0 h / " in text  # the longest run bounds the wall time


def test_a_groups_cost_is_one_process_per_seeds_times_the_ratio_at_the_largest_measured_size_up_to_its_own(
    tmp_path: Path,
) -> None:
    table = _costs(tmp_path / "c.csv", [("ppo", "classic", 0.001)], PPO_GROUPS)
    assert cost_table.costs(table) == {("ppo", "classic"): 0.001}  # the batched rows are not one process per seed's
    measured = cost_table.group_ratios(table)[("ppo", "classic")]
    assert measured == pytest.approx({2: 0.5, 5: 0.2})
    found = {size: cost_table.group_ratio(measured, size) for size in (1, 2, 3, 4, 5, 10)}
    assert found == pytest.approx({1: None, 2: 0.5, 3: 0.5, 4: 0.5, 5: 0.2, 10: 0.2})
    # groups of 3 and 2 seeds x 1000 steps x 1 ms x 0.5
    assert suite_plan.group_cpu_s(measured, [3, 2], 1000, 0.001) == pytest.approx([1.5, 1.0])
    assert suite_plan.group_cpu_s(None, [3, 2], 1000, 0.001) is None
    assert suite_plan.group_cpu_s(measured, [3, 2], 1000, None) is None
    no_alone = _costs(tmp_path / "d.csv", [], (("ppo", "classic", 2, 0.001, ""),))  # type: ignore[arg-type]
    assert cost_table.group_ratios(no_alone) == {}  # a group's cost without one process's beside it: no ratio


def test_the_plan_prices_batched_groups_beside_one_process_per_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5 seeds, 2 jobs at once: ppo's seeds in groups of 3 and 2 (both at the size-2 ratio), trpo's one per process
    (not batched), sac's batched without a measured group cost: named and left out of the grouped total."""
    monkeypatch.setattr(suite_plan, "launcher_at_once", lambda launcher: 2)
    entries = suite_plan.scaled(
        [
            {"algo": "ppo", "env": "CartPole", "budget": 360_000},
            {"algo": "trpo", "env": "Acrobot", "budget": 360_000},
            {"algo": "sac", "env": "Pendulum", "budget": 36_000},
        ],
        1.0,
    )
    rows = [("ppo", "classic", 0.001), ("trpo", "classic", 0.002), ("sac", "classic", 0.01)]
    table = _costs(tmp_path / "c.csv", rows, PPO_GROUPS)
    result = suite_plan.plan(entries, 5, None, cost_table.costs(table), group_table=cost_table.group_ratios(table))
    ppo, trpo, sac = result["multiruns"]
    assert (ppo["batched"], trpo["batched"], sac["batched"]) == (True, False, True)
    assert (ppo["jobs"], trpo["jobs"], sac["jobs"]) == (2, 5, 2)
    # ppo: 5 seeds x 360k steps x 1 ms = 0.5 core-hours one process per seed, x 0.5 ms = 0.25 grouped
    assert ppo["core_hours"] == pytest.approx(0.5) and ppo["grouped_core_hours"] == pytest.approx(0.25)
    assert trpo["grouped_core_hours"] == trpo["core_hours"] == pytest.approx(1.0)
    assert sac["core_hours"] == pytest.approx(0.5) and sac["grouped_core_hours"] is None
    assert result["core_hours"] == pytest.approx(2.0) and result["grouped_core_hours"] == pytest.approx(1.25)
    assert result["grouped_unmeasured"] == ["sac:Pendulum"] and result["grouped_left_out_hours"] == pytest.approx(0.5)
    assert result["longest_group_hours"] == pytest.approx(0.2)  # trpo's run (0.2 h) and ppo's group of 3 (0.15 h)
    text = suite_plan.describe(result, nodes=(1,))
    assert "algo=ppo env=CartPole budget=360000: 5 runs,   0.50 core-h; grouped in 2 jobs:   0.25 core-h" in text
    assert "algo=trpo env=Acrobot budget=360000: 5 runs,   1.00 core-h\n" in text  # (not batched: as it is)
    assert "5 runs,   0.50 core-h; grouped in 2 jobs: cost not measured" in text
    assert "total, one process per seed: 3 multiruns, 15 runs, 2.0 core-hours measured" in text
    assert "9 jobs for 15 runs" in text and "1.2 core-hours measured against 1.5 one process per seed" in text
    assert "(+1 entries without a measured grouped cost, left out: sac:Pendulum)" in text
    assert "on joblib's 2 jobs at once: >= 1.0 h / >= 0.6 h wall" in text  # 2.0 / 2 and 1.25 / 2
    # 10 seeds: groups of 5, at the size-5 ratio
    ten = suite_plan.plan(entries[:1], 10, None, cost_table.costs(table), group_table=cost_table.group_ratios(table))
    assert ten["grouped_core_hours"] == pytest.approx(10 * 360_000 * 0.0002 / 3600)


def test_plan_warns_when_a_run_needs_more_requeues_than_allowed(tmp_path: Path) -> None:
    entries = suite_plan.scaled([{"algo": "sac", "env": "Humanoid", "budget": 10_000_000}], 1.0)
    costs = cost_table.costs(_costs(tmp_path / "c.csv", [("sac", "mujoco", 0.0144)]))
    text = suite_plan.describe(suite_plan.plan(entries, 1, "slurm", costs, memory={}))
    assert "40.0 h of CPU: 9 requeues at a 240-minute limit (max_num_timeout 3: raise it" in text


def test_scale_shrinks_every_budget_with_a_floor() -> None:
    suite = {
        "entries": [
            {"algo": "ppo", "env": "CartPole", "budget": 1_000_000},
            {"algo": "dqn", "env": "Pong", "budget": 10_000, "skip": True},
            {"algo": "a2c", "env": "CartPole", "budget": 100_000},
        ],
        "parity": [{"algo": "sac", "env": "Pendulum", "budget": 1_500}],
    }
    suites.scale(suite, 0.001)
    assert [e["budget"] for e in suite["entries"]] == [1_000, 10_000, suite_plan.MIN_SCALED_BUDGET]
    assert suite["parity"][0]["budget"] == suite_plan.MIN_SCALED_BUDGET
    with pytest.raises(SystemExit, match=r"--scale 0\.0: must be a positive number"):
        suites.scale(suite, 0.0)


def test_dry_run_runs_nothing_and_names_the_launchers_resources(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sized: list[int] = []  # sizing ~100 runs composes and builds their envs (~15 s CPU): test_the_plan_sizes_... does
    monkeypatch.setattr(suite_plan, "memory_of", lambda entries: sized.append(len(entries)) or {})
    assert regress.main(["--suite", "zoo_all", "--launcher", "slurm", "--dry-run"]) == 0
    assert sized  # with a launcher that requests memory, the plan sizes the runs
    out = capsys.readouterr().out
    assert "zoo_all entries (lit; seeds [0, 1, 2, 3, 4]):" in out and "time limit 240 min" in out
    assert "975 runs" in out  # 199 rows, 4 skipped, 5 seeds
    with pytest.raises(SystemExit, match=r"--launcher: unknown launcher .slurmm.; available: .*slurm"):
        regress.main(["--suite", "ci", "--launcher", "slurmm", "--dry-run"])


@pytest.mark.parametrize(
    ("suite_name", "flags", "forced"),
    [
        ("zoo_classic", [], False),  # a reference suite (hours of cluster time) resumes by default
        ("zoo_classic", ["--fresh"], True),
        ("ci", [], True),  # a threshold suite measures the code as it is now
        ("ci", ["--resume"], False),
    ],
)
def test_reference_suites_resume_and_threshold_suites_train_afresh(
    suite_name: str, flags: list[str], forced: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: list[list[str]] = []
    monkeypatch.setattr(regress.subprocess, "run", lambda command, **kwargs: commands.append(command))
    monkeypatch.setattr(regress, "check", lambda suite, *args: regress.run_suite(suite, "lit", tmp_path) and 0)
    regress.main(["--suite", suite_name, *flags, "--out-dir", str(tmp_path)])
    assert commands and all(("force=true" in c) == forced for c in commands)


def test_parity_entries_follow_the_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact-parity sub-sweeps of a suite run on the suite's --launcher (they ran locally before)."""
    launchers: list[str | None] = []
    monkeypatch.setattr(
        regress,
        "run_suite",
        lambda suite, backend, out, launcher=None, kind="entries": launchers.append(launcher) or [],
    )
    suite = suites.load_suite("ci")
    regress.check_parity(suite, tmp_path, "slurm")
    assert launchers == ["slurm", "slurm"]  # lit and SB3


# ------------------------------------------------------------------------------------- memory per job (mem_gb)


@pytest.mark.parametrize(
    ("overrides", "optimize"),
    [
        (("algo=dqn", "env=CartPole"), False),
        (("algo=sac", "env=Pendulum"), False),
        (("algo=sac", "env=Pendulum"), True),
    ],
)
def test_replay_buffer_bytes_are_those_of_sb3s_buffer(overrides: tuple[str, ...], optimize: bool) -> None:
    """The estimate equals the bytes of the arrays SB3's ReplayBuffer allocates for the run's spaces."""
    from stable_baselines3.common.buffers import ReplayBuffer

    from lit_bench.config.envs import make_envs

    cfg = compose_run(*overrides, "algo.buffer_size=1000", f"algo.optimize_memory_usage={str(optimize).lower()}")
    train, evaluation = make_envs(cfg.env, "env", 0, None)
    buffer = ReplayBuffer(
        1000,
        train.observation_space,
        train.action_space,
        optimize_memory_usage=optimize,
        handle_timeout_termination=not optimize,
    )
    train.close(), evaluation.close()
    allocated = sum(v.nbytes for v in vars(buffer).values() if isinstance(v, np.ndarray))
    assert suite_plan.replay_buffer_bytes(cfg) == allocated


def test_a_runs_memory_follows_its_replay_buffer_and_checkpoints() -> None:
    big = ("algo=dqn", "env=CartPole", "algo.buffer_size=100000000")  # 52 bytes a transition: 4.84 GiB
    assert suite_plan.memory_gb(compose_run(*big)) == 12  # 2 + twice the buffer (checkpoints keep it)
    assert suite_plan.memory_gb(compose_run(*big, "checkpoint.replay_buffer=false")) == 7
    assert suite_plan.memory_gb(compose_run("algo=ppo", "env=CartPole")) == suite_plan.PROCESS_GB


class _Executor:
    """What submit_by_memory uses of submitit's executor: update_parameters, and map_array (passed apart)."""

    def __init__(self) -> None:
        self.mem_gb: int | None = None
        self.arrays: list[tuple[int | None, list[str]]] = []

    def update_parameters(self, mem_gb: int) -> None:
        self.mem_gb = mem_gb

    def map_array(self, fn: object, names: list[str]) -> list[str]:
        self.arrays.append((self.mem_gb, list(names)))
        return [f"job-{name}" for name in names]


def test_jobs_are_one_array_per_memory_request_and_keep_their_order() -> None:
    executor = _Executor()
    jobs = submitit_launcher.submit_by_memory(
        executor, _Executor.map_array, None, [["a", "b", "c", "d"]], [8, 108, 8, 13]
    )
    assert jobs == ["job-a", "job-b", "job-c", "job-d"]  # the order the launcher awaits them in
    assert executor.arrays == [(8, ["a", "c"]), (108, ["b"]), (13, ["d"])]


def test_the_plan_says_what_jobs_ask_for_beyond_mem_gb(tmp_path: Path) -> None:
    entries = suite_plan.scaled(
        [
            {"algo": "qrdqn", "env": "Pong", "budget": 10_000_000},
            {"algo": "qrdqn", "env": "Breakout", "budget": 10_000_000},
            {"algo": "sac", "env": "AntBulletEnv", "budget": 1_000_000},
            {"algo": "ppo", "env": "CartPole", "budget": 100_000},
        ],
        1.0,
    )
    memory = {("qrdqn", "Pong"): 108, ("qrdqn", "Breakout"): 3, ("sac", "AntBulletEnv"): None}
    result = suite_plan.plan(entries, 5, "slurm", {}, memory=memory)
    assert [line["mem_gb"] for line in result["multiruns"]] == [108, 8, 8]  # at least the launcher's 8 GB
    text = suite_plan.describe(result)
    assert "algo=qrdqn env=Pong,Breakout budget=10000000: 10 runs, cost not measured, up to 108 GB per job" in text
    ppo = next(
        line for line in text.splitlines() if "ppo env=CartPole budget=100000: 5 runs, cost not measured" in line
    )
    assert "memory of AntBulletEnv not sized" in text and "GB" not in ppo


def test_the_plan_sizes_a_suites_off_policy_runs() -> None:
    entries = suite_plan.scaled(
        [{"algo": "dqn", "env": "CartPole", "budget": 1000, "overrides": ["algo.buffer_size=100000000"]}], 1.0
    )
    assert suite_plan.memory_of(entries) == {("dqn", "CartPole"): 12}


def test_a_multirun_whose_group_does_not_pay_trains_one_process_per_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """auto's rule (seed_groups.AUTO_MAX_RATIO) in the suite's plan: td3's measured group ratio 1.25 keeps its seeds
    one process each, and its line says why; ppo's 0.5 groups them."""
    monkeypatch.setattr(suite_plan, "launcher_at_once", lambda launcher: 2)
    entries = suite_plan.scaled(
        [{"algo": "ppo", "env": "CartPole", "budget": 360_000}, {"algo": "td3", "env": "Pendulum", "budget": 36_000}],
        1.0,
    )
    table = _costs(tmp_path / "c.csv", [("ppo", "classic", 0.001), ("td3", "classic", 0.01)], PPO_GROUPS)
    ratios = {**cost_table.group_ratios(table), ("td3", "classic"): {2: 1.25}}
    result = suite_plan.plan(entries, 5, None, cost_table.costs(table), group_table=ratios)
    ppo, td3 = result["multiruns"]
    assert (ppo["batched"], td3["batched"]) == (True, False) and (ppo["jobs"], td3["jobs"]) == (2, 5)
    assert td3["grouped_core_hours"] == td3["core_hours"] and ppo["unpaid"] is None
    text = suite_plan.describe(result, nodes=(1,))
    assert (
        "td3 env=Pendulum budget=36000: 5 runs,   0.50 core-h; one process per seed: a seed of td3 in a batched" in text
    )
    assert "costs 1.25x its CPU alone (measured on the classic family" in text
