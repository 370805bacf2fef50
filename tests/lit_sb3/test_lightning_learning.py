"""Lightning's precision and multi-process training keep the learning results (RL Zoo settings, slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env

from lit_sb3 import PPO, SAC, RLEnvDataModule, RLTrainer
from lit_sb3.common.seeding import EVAL_SEED_OFFSET
from tests.lit_sb3.helpers import zoo_settings

pytestmark = [pytest.mark.learning, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def _best_eval_reward(
    model, env_id: str, *, budget: int, threshold: float, n_envs: int, eval_every: int, precision: str
) -> float:
    """Train on an RLTrainer with ``precision``; the best mean of 10 deterministic episodes every ``eval_every``."""
    evaluator = EvalCallback(
        make_vec_env(env_id, seed=EVAL_SEED_OFFSET),
        eval_freq=max(eval_every // n_envs, 1),
        n_eval_episodes=10,
        callback_on_new_best=StopTrainingOnRewardThreshold(threshold),
        verbose=0,
    )
    trainer = RLTrainer(
        max_steps=budget, precision=precision, rl_callback=evaluator, logger=False, enable_progress_bar=False
    )
    trainer.fit(model, datamodule=RLEnvDataModule(train_env=env_id, n_envs=n_envs, seed=0))
    return float(evaluator.best_mean_reward)


def test_bf16_ppo_solves_cartpole_within_100k():
    zoo = zoo_settings("ppo", "CartPole")
    n_envs = zoo.hyperparameters.pop("n_envs")
    best = _best_eval_reward(
        PPO("MlpPolicy", seed=0, **zoo.hyperparameters),
        "CartPole-v1",
        budget=zoo.budget,
        threshold=475,
        n_envs=n_envs,
        eval_every=5_000,
        precision="bf16-mixed",
    )
    assert best >= 475


def test_bf16_sac_zoo_pendulum():
    zoo = zoo_settings("sac", "Pendulum")
    best = _best_eval_reward(
        SAC("MlpPolicy", seed=0, **zoo.hyperparameters),
        "Pendulum-v1",
        budget=zoo.budget,
        threshold=-250,
        n_envs=1,
        eval_every=2_000,
        precision="bf16-mixed",
    )
    assert best >= -250


def test_two_process_ppo_solves_cartpole_within_the_one_process_budget():
    """devices=2 (gloo): the Zoo's global rollout split over two processes reaches 475 within the 100k env steps
    that one process is given in test_ppo_solves_cartpole_within_100k."""
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "ddp_ppo.py"),
            "--devices",
            "2",
            "--steps",
            "100000",
            "--threshold",
            "475",
            "--eval-every",
            "5000",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=os.getcwd(),
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["env_steps"] <= 100_000 and report["best_mean_reward"] >= 475, report
