"""Lightning features on RL runs: checkpoints and callbacks counted in env steps, predict, precision, processes."""

from __future__ import annotations

import glob
import re

import numpy as np
import pandas as pd
import pytest
import torch
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from sb3_contrib.common.envs import InvalidActionEnvDiscrete
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.env_util import make_vec_env

from lit_sb3 import (
    A2C,
    ARS,
    DDPG,
    DQN,
    PPO,
    QRDQN,
    SAC,
    TD3,
    TQC,
    TRPO,
    CrossQ,
    RecurrentPPO,
    RLEnvDataModule,
    RLTrainer,
)
from lit_sb3.algorithms.ppo_mask import MaskablePPO


def _trainer(max_steps: int, **kwargs) -> RLTrainer:
    kwargs.setdefault("logger", False)
    return RLTrainer(max_steps=max_steps, enable_progress_bar=False, **kwargs)


def _ppo() -> PPO:
    return PPO("MlpPolicy", n_steps=64, batch_size=64, n_epochs=2, seed=0)


def _steps_in(paths: list[str]) -> list[int]:
    return sorted(int(re.search(r"step=(\d+)", p).group(1)) for p in paths)


# ---------------------------------------------------------------------- checkpoints and callbacks in env steps


def test_readme_checkpoint_example_saves_without_enable_checkpointing(tmp_path):
    trainer = _trainer(128, callbacks=[ModelCheckpoint(save_last=True)], default_root_dir=str(tmp_path))
    trainer.fit(_ppo(), datamodule=RLEnvDataModule(train_env="CartPole-v1", seed=0))
    saved = glob.glob(str(tmp_path / "**" / "*.ckpt"), recursive=True)
    assert any(p.endswith("last.ckpt") for p in saved)
    assert _steps_in([p for p in saved if "step=" in p]) == [128]  # {step} is the env-step count
    assert not _trainer(64).checkpoint_callbacks  # no ModelCheckpoint given: nothing saved behind the user's back


@pytest.mark.parametrize(
    "make, env_id, every, expected",
    [
        # PPO: a rollout is 64 env steps; saved after the update of the rollout that crosses each multiple of 100
        (_ppo, "CartPole-v1", 100, [128, 256, 320, 448, 512]),
        # DQN: one training step covers 16 env steps (4 rounds of train_freq=4)
        (lambda: DQN("MlpPolicy", learning_starts=32, seed=0), "CartPole-v1", 100, [112, 208, 304, 400, 512]),
    ],
)
def test_every_n_train_steps_counts_env_steps(tmp_path, make, env_id, every, expected):
    checkpoint = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=every, save_top_k=-1, filename="{step}")
    model = make()
    _trainer(512, callbacks=[checkpoint]).fit(model, datamodule=RLEnvDataModule(train_env=env_id, seed=0))
    assert _steps_in(glob.glob(str(tmp_path / "step=*.ckpt"))) == expected
    resumed = type(model).load_from_checkpoint(str(tmp_path / f"step={expected[0]}.ckpt"), weights_only=False)
    assert resumed.num_timesteps == expected[0]


def test_lightning_callbacks_log_at_env_steps(tmp_path):
    trainer = _trainer(
        256, callbacks=[LearningRateMonitor(logging_interval="step")], logger=CSVLogger(tmp_path), log_every_n_steps=1
    )
    trainer.fit(_ppo(), datamodule=RLEnvDataModule(train_env="CartPole-v1", seed=0))
    metrics = pd.read_csv(glob.glob(str(tmp_path / "**" / "metrics.csv"), recursive=True)[0])
    lr_steps = metrics.dropna(subset=["lr-Adam"])["step"].tolist()
    reward_steps = metrics.dropna(subset=["rollout/ep_rew_mean"])["step"].tolist()
    assert set(lr_steps) == {64, 128, 192, 256}  # once per training step (minibatch), at the rollout's env step
    assert set(lr_steps) == set(reward_steps)
    assert trainer.global_step == 256


def test_early_stopping_on_rollout_reward_on_and_off_policy():
    # min_delta no run can reach: stop after `patience` checks without improvement
    for model, env_id, per_check in (
        (_ppo(), "CartPole-v1", 64),
        (DQN("MlpPolicy", learning_starts=32, seed=0), "CartPole-v1", None),
    ):
        stopper = EarlyStopping(monitor="rollout/ep_rew_mean", mode="max", patience=2, min_delta=1e9)
        _trainer(20_000, callbacks=[stopper]).fit(model, datamodule=RLEnvDataModule(train_env=env_id, seed=0))
        assert model.num_timesteps < 2_000, type(model).__name__
        if per_check:
            assert stopper.wait_count == 2
            assert model.num_timesteps == 3 * per_check  # on-policy: one check per rollout
        else:  # off-policy: one check per metrics dump (every 4 episodes), and Lightning's own as the run ends
            assert stopper.wait_count == 3


def test_early_stopping_on_eval_reward():
    evaluator = EvalCallback(make_vec_env("CartPole-v1", seed=5), eval_freq=64, n_eval_episodes=2, verbose=0)
    stopper = EarlyStopping(monitor="eval/mean_reward", mode="max", patience=1, min_delta=1e9, strict=False)
    model = _ppo()
    _trainer(20_000, callbacks=[stopper], rl_callback=evaluator).fit(
        model, datamodule=RLEnvDataModule(train_env="CartPole-v1", seed=0)
    )
    assert stopper.wait_count == 1
    assert model.num_timesteps == 128  # evaluated at 64 and 128: no improvement at the second


def test_validate_and_test_use_different_env_seeds():
    data = RLEnvDataModule(train_env="CartPole-v1", seed=0, n_eval_episodes=3, deterministic_eval=False)
    model = _ppo()
    trainer = _trainer(64)
    trainer.fit(model, datamodule=data)
    assert not np.array_equal(data.get_env("validate").reset(), data.get_env("test").reset())
    validation = trainer.validate(model, datamodule=data, verbose=False)[0]
    test = trainer.test(model, datamodule=data, verbose=False)[0]
    assert validation["eval/mean_reward"] != test["eval/mean_reward"]


# ---------------------------------------------------------------------- predict


def test_predict_returns_episodes_with_optional_trajectories():
    data = RLEnvDataModule(train_env="CartPole-v1", seed=0, n_eval_episodes=3)
    model = _ppo()
    trainer = _trainer(64)
    trainer.fit(model, datamodule=data)
    episodes = trainer.predict(model, datamodule=data)
    assert len(episodes) == 3 and set(episodes[0]) == {"return", "length"}
    assert all(e["return"] == e["length"] > 0 for e in episodes)  # CartPole: +1 per step
    with_trajectories = trainer.predict(model, datamodule=data, trajectories=True)
    for episode in with_trajectories:
        assert episode["observations"].shape == (episode["length"], 4)
        assert episode["actions"].shape == (episode["length"],)
    first = with_trajectories[0]
    actions, _ = model.predict(first["observations"], deterministic=True)
    np.testing.assert_array_equal(actions, first["actions"])  # the recorded actions are the policy's


def test_predict_masked_actions_stay_valid():
    data = RLEnvDataModule(
        train_env=lambda: InvalidActionEnvDiscrete(dim=10, n_invalid_actions=5), seed=0, n_eval_episodes=2
    )
    model = MaskablePPO("MlpPolicy", n_steps=64, seed=0)
    trainer = _trainer(64)
    trainer.fit(model, datamodule=data)
    episodes = trainer.predict(model, datamodule=data, trajectories=True)
    assert [len(e["actions"]) for e in episodes] == [e["length"] for e in episodes]


# ---------------------------------------------------------------------- precision

_SMALL = {"net_arch": [32, 32]}
_OFF = {"learning_starts": 64, "batch_size": 32, "policy_kwargs": _SMALL, "seed": 0}
ALGORITHMS = {
    "PPO": (lambda: PPO("MlpPolicy", n_steps=64, batch_size=32, seed=0), "CartPole-v1"),
    "A2C": (lambda: A2C("MlpPolicy", seed=0), "CartPole-v1"),
    "TRPO": (lambda: TRPO("MlpPolicy", n_steps=128, batch_size=64, seed=0), "CartPole-v1"),
    "MaskablePPO": (
        lambda: MaskablePPO("MlpPolicy", n_steps=64, batch_size=32, seed=0),
        lambda: InvalidActionEnvDiscrete(dim=10, n_invalid_actions=5),
    ),
    "RecurrentPPO": (
        lambda: RecurrentPPO(
            "MlpLstmPolicy",
            n_steps=64,
            batch_size=32,
            n_epochs=2,
            seed=0,
            policy_kwargs={"lstm_hidden_size": 16, **_SMALL},
        ),
        "Pendulum-v1",
    ),
    "ARS": (lambda: ARS("LinearPolicy", n_delta=2, seed=0), "Pendulum-v1"),
    "SAC": (lambda: SAC("MlpPolicy", **_OFF), "Pendulum-v1"),
    "TD3": (lambda: TD3("MlpPolicy", **_OFF), "Pendulum-v1"),
    "DDPG": (lambda: DDPG("MlpPolicy", **_OFF), "Pendulum-v1"),
    "TQC": (lambda: TQC("MlpPolicy", **_OFF), "Pendulum-v1"),
    "CrossQ": (lambda: CrossQ("MlpPolicy", **_OFF), "Pendulum-v1"),
    "DQN": (lambda: DQN("MlpPolicy", **_OFF), "CartPole-v1"),
    "QRDQN": (lambda: QRDQN("MlpPolicy", **_OFF), "CartPole-v1"),
}


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_bf16_mixed_trains_and_evaluates_every_algorithm(name):
    make, env = ALGORITHMS[name]
    model = make()
    data = RLEnvDataModule(train_env=env, seed=0, n_eval_episodes=1)
    model.build(data.train_env.observation_space, data.train_env.action_space)
    before = torch.nn.utils.parameters_to_vector(model.policy.parameters()).clone()
    trainer = _trainer(128, precision="bf16-mixed")
    trainer.fit(model, datamodule=data)
    after = torch.nn.utils.parameters_to_vector(model.policy.parameters())
    assert after.dtype == torch.float32 and torch.isfinite(after).all()
    assert not torch.equal(before, after)  # the updates ran
    assert np.isfinite(trainer.validate(model, datamodule=data, verbose=False)[0]["eval/mean_reward"])


def test_update_runs_under_autocast_and_env_interaction_outside():
    seen: dict[str, set] = {"update": set(), "acting": set()}
    model = SAC("MlpPolicy", **_OFF)
    original_update, original_actions = model.gradient_updates, model._policy_actions

    def update(*args):
        seen["update"].add(torch.is_autocast_enabled("cpu"))
        return original_update(*args)

    def actions(n_envs):
        result = original_actions(n_envs)
        seen["acting"].add(result.dtype)
        return result

    model.gradient_updates, model._policy_actions = update, actions
    _trainer(128, precision="bf16-mixed").fit(model, datamodule=RLEnvDataModule(train_env="Pendulum-v1", seed=0))
    assert seen == {"update": {True}, "acting": {np.dtype("float32")}}


@pytest.mark.parametrize("precision", ["64-true", "64", "bf16-true", "16-true"])
def test_unsupported_precision_fails_before_training(precision):
    with pytest.raises(ValueError, match=r"^precision: RLTrainer supports 32-true, bf16-mixed, 16-mixed \("):
        _trainer(64, precision=precision)


def test_16_mixed_on_cpu_trains_under_bf16_autocast():
    with pytest.warns(UserWarning, match=r"AMP with fp16 is not supported on CPU"):  # Lightning says so, then maps it
        trainer = _trainer(128, precision="16-mixed")
    model = _ppo()
    trainer.fit(model, datamodule=RLEnvDataModule(train_env="CartPole-v1", seed=0))
    assert trainer.precision == "bf16-mixed" and model.num_timesteps == 128
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in model.parameters())


# ---------------------------------------------------------------------- several processes


@pytest.mark.parametrize("make", [lambda: SAC("MlpPolicy"), lambda: ARS("LinearPolicy")], ids=["SAC", "ARS"])
def test_multi_process_refuses_algorithms_without_collective_update(make):
    model = make()
    trainer = _trainer(64, accelerator="cpu", devices=2, strategy="ddp")
    with pytest.raises(ValueError, match=r"^devices: multi-process training supports PPO, A2C"):
        trainer.fit(model, datamodule=RLEnvDataModule(train_env="Pendulum-v1", seed=0))


def test_multi_process_refuses_spawn_strategy():
    trainer = _trainer(64, accelerator="cpu", devices=2, strategy="ddp_spawn")
    with pytest.raises(ValueError, match=r"^strategy: multi-process RL training runs under strategy='ddp'"):
        trainer.fit(_ppo(), datamodule=RLEnvDataModule(train_env="CartPole-v1", seed=0))
