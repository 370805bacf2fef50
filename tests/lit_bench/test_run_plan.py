"""A command's plan before it runs (lit_bench.control.run_plan) and the budgets that cannot show learning
(lit_bench.config.budget): the cost of the design card's sweep, ``--dry-run``, the refusal of a budget without a
gradient step, and the budget warnings once per sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lit_bench.config.budget import budget_warnings, no_learning, smallest_learning_budget, trained_steps
from lit_bench.control.cost_table import costs, group_ratio, group_ratios
from lit_bench.control.run_plan import Config, describe, grouped_cost, make_plan
from tests.lit_bench.helpers import run_py

pytestmark = pytest.mark.harness

CARD = ["-m", "algo=sac,td3", "env=HalfCheetah", "seed=0,1,2"]


def _cfg(algo: dict, n_envs: int = 1, every: int | None = None):
    return OmegaConf.create(
        {"algo": algo, "env": {"n_envs": n_envs}, "eval": {"every": every}, "algo_name": "x", "env_name": "E"}
    )


@pytest.mark.parametrize(
    ("algo", "n_envs", "smallest"),
    [
        ({"learning_starts": 10000, "train_freq": 1}, 1, 10001),
        ({"learning_starts": 100, "train_freq": 8}, 1, 97),  # collects of 8 steps: the one ending at 104 trains
        ({"learning_starts": 1000, "train_freq": 4}, 4, 993),  # 16 env steps a collect
        ({"learning_starts": 0, "train_freq": [2, "step"]}, 1, 1),
        ({"n_steps": 32}, 8, None),  # on-policy: no learning_starts
    ],
)
def test_the_smallest_budget_with_a_gradient_step_follows_sb3s_learn(algo, n_envs, smallest):
    assert smallest_learning_budget(_cfg(algo, n_envs)) == smallest


def test_a_budget_without_a_gradient_step_is_one_line_naming_the_parameter_and_the_smallest_budget():
    cfg = _cfg({"learning_starts": 10000, "train_freq": 1})
    assert no_learning(cfg, 10001) is None
    line = no_learning(cfg, 3000)
    assert line is not None and "\n" not in line
    assert "budget=3000" in line and "algo.learning_starts=10000" in line and "budget=10001" in line
    episodes = no_learning(_cfg({"learning_starts": 50, "train_freq": [1, "episode"]}), 40)
    assert episodes is not None and "budget>50" in episodes


def test_budget_warnings_name_less_than_one_rollout_no_evaluation_before_the_end_and_an_overshoot():
    [rollout, overshoot] = budget_warnings(_cfg({"n_steps": 32}, n_envs=8), 200)
    assert "less than one rollout" in rollout and "budget=512" in rollout
    assert "not a multiple" in overshoot and "trains 256" in overshoot
    [evaluation] = budget_warnings(_cfg({}, every=5000), 5000)
    assert evaluation.startswith("eval.every=5000 >= budget=5000") and "eval.every<=2500" in evaluation
    assert budget_warnings(_cfg({"n_steps": 32}, n_envs=8, every=256), 512) == []


def test_a_budget_below_one_ars_update_is_warned_with_the_episodes_it_may_play():
    def ars(env: dict, n_delta: int = 60, n_eval_episodes: int = 1):
        cfg = _cfg({"n_delta": n_delta, "n_eval_episodes": n_eval_episodes})
        cfg.env = env
        return cfg

    [line] = budget_warnings(ars({"id": "Ant-v5"}), 2000)  # the Zoo's Ant: 120 episodes of up to 1,000 steps
    assert "\n" not in line and line.startswith("budget=2000")
    assert "algo.n_delta=60" in line and "120 episodes of up to 1000 env steps" in line and "up to 120000" in line
    [line] = budget_warnings(ars({"id": "CartPole-v1"}, n_delta=2, n_eval_episodes=3), 5000)
    assert "12 episodes of up to 500" in line and "up to 6000" in line
    assert budget_warnings(ars({"id": "CartPole-v1"}, n_delta=2), 2000) == []  # 4 x 500: one update fits
    [line] = budget_warnings(ars({"id": "CartPole-v1", "kwargs": {"max_episode_steps": 50}}, n_delta=30), 2000)
    assert "of up to 50 env steps" in line  # the env's own limit
    assert budget_warnings(ars({"id": "NoSuchEnv-v0"}), 10) == []  # no known limit: nothing to say
    assert budget_warnings(ars({"id": "CartPole-v1", "make": {"_target_": "f"}}), 10) == []  # built by a factory


def test_a_run_is_priced_at_the_env_steps_it_trains():
    assert trained_steps(_cfg({"n_steps": 32}, n_envs=8), 1000) == (1024, True)  # whole rollouts of 256
    assert trained_steps(_cfg({"n_steps": 32}, n_envs=8), 1024) == (1024, True)
    assert trained_steps(_cfg({"learning_starts": 100}), 1000) == (1000, True)  # off-policy: the budget
    assert trained_steps(_cfg({"n_delta": 60}), 1000) == (1000, False)  # ARS: at least, its last update's episodes
    # a budget under one rollout trains one whole rollout: priced as such (PPO's Acrobot rollout is 16 x 256)
    plan = make_plan(["-m", "algo=ppo,ars", "env=Acrobot", "seed=0,1", "budget=1000"])
    assert plan is not None
    ppo, ars = plan.configs
    assert (ppo.steps, ppo.steps_exact, ars.steps, ars.steps_exact) == (4096, True, 1000, False)
    assert ppo.cpu_s == pytest.approx(4096 * costs()[("ppo", "classic")])
    text = describe(plan)
    assert "ars on Acrobot, budget=1000: 2 runs, at least " in text
    assert "ppo on Acrobot, budget=1000: 2 runs, at least" not in text
    assert f"plan: 4 runs, at least {2 * 4096 + 2 * 1000:,} env steps" in text


def test_the_cards_sweep_is_priced_from_the_measured_speeds():
    plan = make_plan(CARD)
    assert plan is not None and plan.multirun and plan.runs == 6
    assert plan.env_steps == 6 * 1_000_000  # the tuned HalfCheetah budget
    speed = costs()
    expected = 3 * 1_000_000 * (speed[("sac", "mujoco")] + speed[("td3", "mujoco")])
    assert plan.cpu_s == pytest.approx(expected)
    text = describe(plan)
    assert "sac on HalfCheetah, budget=1000000: 3 runs" in text
    assert f"plan: 6 runs, 6,000,000 env steps; estimated {expected / 3600:.1f} h CPU" in text
    wall = plan.wall_s()
    assert wall is not None and wall >= max(1_000_000 * speed[("td3", "mujoco")], expected / 6)


def _completed_run(out_dir: Path, algo_directory: str, env: str, seed: int, **summary: object) -> None:
    run = out_dir / "old_sweep" / algo_directory / env / "budget=1000-0123456789" / f"seed_{seed}"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"status": "completed", **summary}))


def test_the_plan_prices_a_config_at_this_machines_speed_where_it_has_completed_runs(tmp_path: Path):
    for seed, fps in enumerate((900.0, 1000.0, 4000.0)):  # (the median: 1000 env steps per CPU-second)
        _completed_run(tmp_path, "ppo", "CartPole", seed, cpu_fps=fps)
    _completed_run(tmp_path, "ppo", "CartPole", 3, cpu_fps=1.0, **{"status": "failed"})  # not a measured speed
    _completed_run(tmp_path, "ppo@sb3", "CartPole", 0, cpu_fps=10.0)  # another backend's
    for seed in (4, 5, 6):  # batched seeds: their group's CPU over its seeds, not one process's speed
        _completed_run(tmp_path, "ppo", "CartPole", seed, cpu_fps=50_000.0, cpu_time_note="trained in a batched group")
    args = ["-m", "algo=ppo", "env=CartPole,Acrobot", "seed=0,1", "budget=20000", f"out_dir={tmp_path}"]
    plan = make_plan(args)
    assert plan is not None
    cartpole, acrobot = plan.configs
    # priced at the env steps a run trains: the budget in whole rollouts (CartPole 8 x 32, Acrobot 16 x 256)
    assert (cartpole.steps, acrobot.steps) == (20224, 20480) and cartpole.steps_exact
    assert cartpole.cpu_s == pytest.approx(20224 / 1000.0)
    assert acrobot.measured_on == "Acrobot"  # no runs here: the suite cost table's speed
    assert acrobot.cpu_s == pytest.approx(20480 * costs()[("ppo", "classic")])
    text = describe(plan)
    assert "ppo on CartPole, budget=20000: 2 runs, 40 s CPU (at its speed in this machine's completed runs)" in text


def _config(runs: int, groups: int, batchable: bool, ratios: dict[int, float] | None) -> Config:
    return Config(
        "ppo", "CartPole", "lit", 1000, 1000, runs, 1000 * 0.001, "Acrobot", [], [], groups, batchable, ratios
    )


def test_the_grouped_cost_prices_batched_groups_at_their_measured_ratio_to_one_process_per_seed():
    """5 seeds in groups of 3 and 2 (both at the size-2 ratio: the largest measured up to 3), 4 seeds one per
    process (not batched), 3 batched seeds without a measured ratio (left out, named), 1 seed alone."""
    batched = _config(5, 2, True, {2: 0.5, 5: 0.2})
    alone = _config(4, 4, False, None)
    unmeasured = _config(3, 1, True, None)
    single = _config(1, 1, True, {2: 0.5})
    assert batched.group_cpu_s() == pytest.approx([1.5, 1.0])  # 3 and 2 seeds x 1000 steps x 1 ms x 0.5
    cost = grouped_cost([batched, alone, unmeasured, single], parallel=2)
    assert cost.cpu_s == pytest.approx(2.5 + 4 * 1.0 + 1.0)
    assert cost.unmeasured == [unmeasured] and cost.left_out_cpu_s == pytest.approx(3.0)
    assert cost.wall_s == pytest.approx(7.5 / 2)
    assert grouped_cost([_config(10, 2, True, {2: 0.5, 5: 0.2})], 2).cpu_s == pytest.approx(10 * 0.2)
    assert grouped_cost([batched], 2).wall_s == pytest.approx(1.5)  # the group of 3 bounds it


def test_the_sweeps_plan_prints_its_grouped_estimate_from_the_cost_table():
    plan = make_plan(["-m", "algo=ppo", "env=CartPole", "seed=0,1,2,3", "budget=20480", "hydra.launcher.n_jobs=2"])
    assert plan is not None and plan.jobs == 2
    ratio = group_ratio(group_ratios()[("ppo", "classic")], 2)
    assert ratio is not None
    per_seed = costs()[("ppo", "classic")] * ratio
    assert plan.grouped().cpu_s == pytest.approx(4 * 20480 * per_seed)
    text = describe(plan)
    assert (
        f"4 runs, {4 * 20480 * costs()[('ppo', 'classic')]:.0f} s CPU (at its speed on Acrobot); grouped: 2 jobs"
        in text
    )
    assert f"; grouped: 2 jobs of 2, 2 seeds, {4 * 20480 * per_seed:.0f} s CPU (at its speed on Acrobot)" in text
    assert "seeds_per_process=auto): 4 runs in 2 jobs" in text and "the CPU ratio group / alone" in text


def test_a_basic_launcher_runs_one_at_a_time_and_seeds_do_not_multiply_the_configs():
    plan = make_plan([*CARD, "budget=20000", "hydra/launcher=basic", "backend=lit,sb3"])
    assert plan is not None and plan.launcher == "basic" and plan.parallel == 1
    assert len(plan.configs) == 4 and plan.runs == 12
    assert plan.wall_s() == pytest.approx(plan.cpu_s)
    assert "sac@sb3 on HalfCheetah" in describe(plan)


def test_an_optuna_study_is_planned_as_its_trials_times_its_seeds():
    space = "algo.learning_rate=tag(log, interval(1e-5, 1e-2))"  # (a search dimension on the command line)
    args = ["-m", "hydra/sweeper=tpe", "algo=ppo", "env=CartPole", "budget=20000", space, "hpo.seeds=2"]
    plan = make_plan([*args, "hydra.sweeper.n_trials=7"])
    assert plan is not None and plan.study == (7, 2) and plan.runs == 14 and plan.env_steps == 14 * 20224
    assert plan.cpu_s == pytest.approx(14 * 20224 * costs()[("ppo", "classic")])  # (whole rollouts of 256)
    assert "an Optuna study of 7 trials x 2 seeds: at most these runs" in describe(plan)


def test_an_optuna_study_whose_budget_makes_no_gradient_step_is_refused_unless_it_searches_learning_starts():
    args = ["-m", "hydra/sweeper=tpe_sac", "algo=sac", "env=HalfCheetah", "budget=3000"]
    plan = make_plan(args)
    assert plan is not None and plan.configs[0].problems[0].startswith("budget=3000: sac on HalfCheetah makes no")
    searched = make_plan([*args, "algo.learning_starts=choice(100, 1000)"])  # (a dimension of the search space)
    assert searched is not None and searched.configs[0].problems == []


def test_dry_run_prints_the_plan_and_makes_nothing(tmp_path: Path):
    done = run_py("--dry-run", *CARD, f"out_dir={tmp_path}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "plan: 6 runs, 6,000,000 env steps; estimated" in done.stdout
    assert not any(tmp_path.iterdir())
    single = run_py("--dry-run", "algo=ppo", "env=CartPole", f"out_dir={tmp_path}")
    assert single.returncode == 0 and "plan: 1 run, 100,096 env steps" in single.stdout
    assert not any(tmp_path.iterdir())


def test_the_cards_sweep_at_budget_3000_is_refused_in_one_line_per_config(tmp_path: Path):
    done = run_py(*CARD, "budget=3000", f"out_dir={tmp_path}")
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 2, done.stderr
    assert errors[0].startswith("Error: budget=3000: sac on HalfCheetah makes no gradient step")
    assert "budget=10001" in errors[0] and "Traceback" not in done.stderr
    assert not any(tmp_path.iterdir())


def test_the_overshoot_warning_is_printed_once_per_sweep(tmp_path: Path):
    done = run_py(
        "-m",
        "algo=ppo",
        "env=CartPole",
        "seed=0,1",
        "budget=300",  # 8 envs x 32 steps: the last rollout ends at 512
        "hydra/launcher=basic",
        "eval.episodes=1",
        f"out_dir={tmp_path}",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("is not a multiple of the 256 env steps") == 1
    assert len(list(tmp_path.rglob("summary.json"))) == 2


def test_dry_run_of_a_config_that_does_not_compose_is_one_line_exit_2(tmp_path: Path):
    done = run_py("--dry-run", "algo=nosuchalgo", f"out_dir={tmp_path}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("Error: ") and "nosuchalgo" in line and "ppo" in line  # Hydra's words, with the choices
    assert not any(tmp_path.iterdir())
