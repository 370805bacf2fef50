"""Every evaluation's episodes kept in ``evaluations.npz`` (SB3's EvalCallback format) and logged through the run's
logger at the env step; no training: a fixed policy on CartPole."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.logger import KVWriter, Logger
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from lit_bench.analysis.load import load_episode_returns
from lit_bench.run.evaluation import PeriodicEval
from lit_bench.store.rundir import RunDir

# How the RL Zoo's plotting scripts read a run (scripts/plot_train.py / all_plots.py): numpy only.
ZOO_LIKE_LOADER = textwrap.dedent("""
    import os, sys
    import numpy as np
    data = np.load(os.path.join(sys.argv[1], "evaluations.npz"))
    timesteps, results, lengths = data["timesteps"], data["results"], data["ep_lengths"]
    assert results.shape == lengths.shape == (len(timesteps), results.shape[1])
    print(" ".join(f"{t}:{m:.3f}" for t, m in zip(timesteps, np.mean(results, axis=1))))
""")


class Captured(KVWriter):
    def __init__(self) -> None:
        self.dumps: list[tuple[dict, int]] = []

    def write(self, key_values, key_excluded, step=0):
        self.dumps.append((dict(key_values), step))
        self.excluded = key_excluded


class FixedPolicy:
    """What PeriodicEval needs of a model: predict, num_timesteps, get_env, logger."""

    def __init__(self, logger: Logger) -> None:
        self.num_timesteps = 0
        self.logger = logger

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        return np.zeros(len(obs), dtype=np.int64), None

    def get_env(self):
        return None


def _evaluator(run: RunDir, logger: Logger) -> tuple[PeriodicEval, FixedPolicy]:
    env = DummyVecEnv([lambda: Monitor(gym.make("CartPole-v1"))])
    env.seed(0)
    evaluator = PeriodicEval(env, run, every=100, episodes=3, deterministic=True)
    model = FixedPolicy(logger)
    evaluator.init_callback(model)
    return evaluator, model


def test_evaluations_npz_is_read_by_a_zoo_style_loader_and_evals_reach_the_logger(tmp_path):
    run = RunDir(tmp_path / "run")
    run.root.mkdir()
    captured = Captured()
    evaluator, model = _evaluator(run, Logger(folder=None, output_formats=[captured]))
    rows = []
    for step in (100, 200):
        model.num_timesteps = step
        rows.append(evaluator.evaluate(model))
    printed = subprocess.run(
        [sys.executable, "-c", ZOO_LIKE_LOADER, str(run.root)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert printed == [f"{r['timesteps']}:{r['mean_return']:.3f}" for r in rows]
    with np.load(run.root / "evaluations.npz") as data:
        assert data["results"].shape == (2, 3) and data["ep_lengths"].dtype.kind == "i"
        assert np.std(data["results"][0]) == pytest.approx(rows[0]["std_return"])  # the per-episode returns
    # logged as SB3's EvalCallback logs, at the env step
    assert [step for _, step in captured.dumps] == [100, 200]
    values, _ = captured.dumps[1]
    assert values["eval/mean_reward"] == rows[1]["mean_return"]
    assert values["eval/mean_ep_length"] == rows[1]["mean_ep_length"]
    assert captured.excluded["eval/mean_reward"] == ("csv",)  # eval.csv is the CSV record; train/metrics.csv not
    episodes = load_episode_returns([run.root])
    assert list(episodes.timesteps) == [100] * 3 + [200] * 3 and list(episodes.episode) == [0, 1, 2] * 2


def test_a_resumed_run_continues_evaluations_npz_from_its_checkpoint(tmp_path):
    run = RunDir(tmp_path / "run")
    run.root.mkdir()
    logger = Logger(folder=None, output_formats=[Captured()])
    evaluator, model = _evaluator(run, logger)
    for step in (100, 200, 300):
        model.num_timesteps = step
        evaluator.evaluate(model)
    run.truncate_eval(200)  # what train.run does before resuming from a checkpoint at 200 steps
    evaluator, model = _evaluator(run, logger)
    model.num_timesteps = 400
    evaluator.evaluate(model)
    with np.load(run.root / "evaluations.npz") as data:
        assert list(data["timesteps"]) == [100, 200, 400] and data["results"].shape == (3, 3)


@pytest.mark.parametrize(
    ("overrides", "budget", "every"),
    [
        (("algo=ppo", "env=CartPole"), 64, 256),  # the Zoo's 8 envs x 32 steps: one rollout, one evaluation
        (("algo=ppo", "env=CartPole"), 20000, 2048),  # a tenth of the budget, rounded up to whole rollouts
        (("algo=a2c", "env=Acrobot"), 1000, 160),  # the Zoo's 16 envs x 5 steps
        (("algo=dqn", "env=CartPole"), 50000, 5120),  # the Zoo's train_freq=256
        (("algo=sac", "env=Pendulum"), 1500, 150),  # a step at a time: a tenth of the budget
        (("algo=ppo", "env=CartPole", "eval.every=100"), 64, 100),  # a chosen eval.every is kept
    ],
)
def test_evaluations_fall_on_whole_units_of_the_algorithms_work(overrides, budget, every):
    from lit_bench.run.evaluation import default_every
    from tests.lit_bench.helpers import compose_run

    cfg = compose_run(*overrides, f"budget={budget}")
    assert int(cfg.eval.every or default_every(cfg, budget)) == every


@pytest.mark.harness
def test_a_tiny_ppo_budget_evaluates_once_at_the_end_of_its_rollout(tmp_path):
    from lit_bench.run.train import run
    from tests.lit_bench.helpers import compose_run

    summary = run(compose_run("algo=ppo", "env=CartPole", "budget=64", f"out_dir={tmp_path}"))
    assert summary["status"] == "completed" and summary["timesteps"] == 256
    (eval_csv,) = tmp_path.rglob("eval.csv")
    assert [int(line.split(",")[0]) for line in eval_csv.read_text().splitlines()[1:]] == [256]
