"""Exact resume through ``RLTrainer.fit(ckpt_path=...)``: a run stopped at a checkpoint and resumed with new objects
ends with the same parameters, bit for bit, as the run that was never stopped (PPO, SAC, TD3, DQN)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import pytest
import torch
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.noise import OrnsteinUhlenbeckActionNoise

from lit_sb3 import A2C, ARS, DDPG, DQN, PPO, QRDQN, SAC, TD3, TQC, TRPO, RecurrentPPO, RLEnvDataModule, RLTrainer
from lit_sb3.common.on_policy import OnPolicyAlgorithm

NET = {"net_arch": [32, 32]}
OFF_POLICY = {"learning_starts": 40, "buffer_size": 200, "batch_size": 32, "policy_kwargs": NET}  # buffer wraps

CASES: dict[str, tuple[Any, str, int, int]] = {
    # name: (factory, env id, budget, stop at)
    "ppo": (
        lambda: PPO("MlpPolicy", n_steps=64, batch_size=32, n_epochs=2, policy_kwargs=NET, seed=3),
        "CartPole-v1",
        320,
        128,
    ),
    "sac": (lambda: SAC("MlpPolicy", **OFF_POLICY, seed=3), "Pendulum-v1", 320, 240),
    "td3": (
        lambda: TD3(
            "MlpPolicy",
            **OFF_POLICY,
            seed=3,
            action_noise=OrnsteinUhlenbeckActionNoise(mean=np.zeros(1), sigma=0.3 * np.ones(1)),
        ),
        "Pendulum-v1",
        320,
        240,
    ),
    "dqn": (
        lambda: DQN("MlpPolicy", **OFF_POLICY, target_update_interval=50, exploration_fraction=0.5, seed=3),
        "CartPole-v1",
        400,
        240,
    ),
}
MORE_CASES: dict[str, tuple[Any, str, int, int]] = {  # the other algorithms, in the slow run
    "a2c": (lambda: A2C("MlpPolicy", n_steps=8, policy_kwargs=NET, seed=3), "CartPole-v1", 160, 64),
    "ppo_lstm": (
        lambda: RecurrentPPO(
            "MlpLstmPolicy",
            n_steps=32,
            batch_size=32,
            n_epochs=2,
            seed=3,
            policy_kwargs={"lstm_hidden_size": 8, "net_arch": [16]},
        ),
        "CartPole-v1",
        160,
        64,
    ),
    "trpo": (lambda: TRPO("MlpPolicy", n_steps=64, batch_size=32, policy_kwargs=NET, seed=3), "CartPole-v1", 320, 128),
    "ars": (lambda: ARS("LinearPolicy", n_delta=2, seed=3), "CartPole-v1", 3000, 1000),
    "qrdqn": (lambda: QRDQN("MlpPolicy", **OFF_POLICY, target_update_interval=50, seed=3), "CartPole-v1", 400, 240),
    "tqc": (lambda: TQC("MlpPolicy", **OFF_POLICY, seed=3), "Pendulum-v1", 320, 240),
    "ddpg": (lambda: DDPG("MlpPolicy", **OFF_POLICY, seed=3), "Pendulum-v1", 320, 240),
}
ALL_CASES = {**CASES, **MORE_CASES}


class StopAndSave(L.Callback):
    """Saves a checkpoint where the harness would (after an update) once ``at`` env steps are reached, then stops."""

    def __init__(self, at: int, path: Path) -> None:
        self.at, self.path = at, path

    def on_train_batch_end(self, trainer: L.Trainer, module: Any, *args: Any) -> None:
        if not isinstance(module, OnPolicyAlgorithm):  # an on-policy batch is a minibatch inside an update
            self._maybe(trainer, module)

    def on_train_epoch_end(self, trainer: L.Trainer, module: Any) -> None:
        self._maybe(trainer, module)

    def _maybe(self, trainer: L.Trainer, module: Any) -> None:
        if module.num_timesteps >= self.at and not self.path.exists():
            trainer.save_checkpoint(str(self.path))
            trainer.should_stop = True


def fit(model: Any, env_id: str, budget: int, ckpt_path: Path | None = None, callbacks: list | None = None) -> Any:
    trainer = RLTrainer(max_steps=budget, logger=False, enable_progress_bar=False, callbacks=callbacks or [])
    return trainer.fit(model, datamodule=RLEnvDataModule(train_env=env_id), ckpt_path=ckpt_path)


def scramble_global_rngs() -> None:
    torch.rand(7)
    np.random.rand(7)
    random.random()


@pytest.mark.parametrize(
    "name", [*sorted(CASES), *(pytest.param(name, marks=pytest.mark.slow) for name in sorted(MORE_CASES))]
)
def test_stopped_and_resumed_run_is_bit_identical(name: str, tmp_path: Path) -> None:
    factory, env_id, budget, stop_at = ALL_CASES[name]
    whole = fit(factory(), env_id, budget)

    ckpt = tmp_path / "stop.ckpt"
    stopped = fit(factory(), env_id, budget, callbacks=[StopAndSave(stop_at, ckpt)])
    assert ckpt.is_file() and stop_at <= stopped.num_timesteps < budget
    scramble_global_rngs()
    resumed = fit(factory(), env_id, budget, ckpt_path=ckpt)  # new model, new env, other global RNG states

    assert resumed.num_timesteps == whole.num_timesteps
    for (key, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), f"{name}: {key} differs after resume"
    scores = [
        evaluate_policy(m, m.get_env() or _eval_env(env_id), n_eval_episodes=2, deterministic=True)
        for m in (whole, resumed)
        for _ in [_seed_eval()]
    ]
    assert scores[0] == scores[1]


def _eval_env(env_id: str) -> Any:
    from stable_baselines3.common.env_util import make_vec_env

    return make_vec_env(env_id, n_envs=1, seed=11)


def _seed_eval() -> None:
    torch.manual_seed(0)
