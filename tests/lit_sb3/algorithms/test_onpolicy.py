"""PPO / A2C as users drive them: SB3 callbacks, persistence, checkpoints, predict, logging and bad input."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
import stable_baselines3 as sb3
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from stable_baselines3.common.callbacks import (
    BaseCallback,
    CallbackList,
    CheckpointCallback,
    EvalCallback,
    ProgressBarCallback,
    StopTrainingOnMaxEpisodes,
    StopTrainingOnRewardThreshold,
)
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import IdentityEnv, IdentityEnvBox, IdentityEnvMultiBinary, SimpleMultiObsEnv
from stable_baselines3.common.utils import LinearSchedule

from lit_sb3 import A2C, PPO, RLEnvDataModule, RLTrainer, sb3_parity

SMALL = dict(n_steps=64, batch_size=32, n_epochs=2)


class Recorder(BaseCallback):
    """Counts SB3 callback events and records a custom metric through SB3's logger."""

    def __init__(self) -> None:
        super().__init__()
        self.events: dict[str, int] = {"start": 0, "rollout_start": 0, "step": 0, "rollout_end": 0, "end": 0}
        self.first_num_timesteps: int | None = None

    def _on_training_start(self) -> None:
        self.events["start"] += 1
        self.first_num_timesteps = self.model.num_timesteps

    def _on_rollout_start(self) -> None:
        self.events["rollout_start"] += 1

    def _on_step(self) -> bool:
        self.events["step"] += 1
        assert "rewards" in self.locals and "infos" in self.locals
        return True

    def _on_rollout_end(self) -> None:
        self.events["rollout_end"] += 1
        self.logger.record("custom/rollouts", self.events["rollout_end"])

    def _on_training_end(self) -> None:
        self.events["end"] += 1


# ---------------------------------------------------------------------------------------------- callbacks


def test_sb3_callback_events_and_logger_reach_lightning_csv(tmp_path):
    recorder = Recorder()
    model = PPO("MlpPolicy", seed=0, **SMALL)
    model.learn(256, env="CartPole-v1", callback=[recorder], default_root_dir=tmp_path)
    assert recorder.events == {"start": 1, "rollout_start": 4, "step": 256, "rollout_end": 4, "end": 1}
    metrics = pd.read_csv(next(tmp_path.rglob("metrics.csv")))
    assert list(metrics["step"]) == [64, 128, 192, 256]  # env steps are the x-axis
    assert list(metrics["custom/rollouts"]) == [1, 2, 3, 4]
    for key in (
        "rollout/ep_rew_mean",
        "time/fps",
        "train/loss",
        "train/policy_gradient_loss",
        "train/value_loss",
        "train/entropy_loss",
        "train/approx_kl",
        "train/clip_fraction",
        "train/explained_variance",
        "train/learning_rate",
        "time/total_timesteps",
    ):
        assert key in metrics.columns, key


def test_eval_callback_with_reward_threshold_stops_training(tmp_path):
    stop = StopTrainingOnRewardThreshold(reward_threshold=15, verbose=0)
    evaluator = EvalCallback(
        make_vec_env("CartPole-v1", n_envs=1),
        callback_on_new_best=stop,
        eval_freq=128,
        n_eval_episodes=2,
        log_path=str(tmp_path),
        best_model_save_path=str(tmp_path),
    )
    model = PPO("MlpPolicy", seed=0, **SMALL)
    model.learn(20_000, env="CartPole-v1", callback=CallbackList([evaluator]))
    assert model.num_timesteps < 20_000
    assert (tmp_path / "best_model.zip").exists()
    assert PPO.load(tmp_path / "best_model.zip").num_timesteps > 0


def test_checkpoint_max_episodes_and_progress_bar_callbacks(tmp_path):
    saver = CheckpointCallback(save_freq=64, save_path=str(tmp_path), name_prefix="ppo")
    model = A2C("MlpPolicy", seed=0)
    model.learn(
        10_000,
        env="CartPole-v1",
        callback=[saver, StopTrainingOnMaxEpisodes(max_episodes=3), ProgressBarCallback()],
    )
    assert model.num_timesteps < 10_000
    assert sorted(tmp_path.glob("ppo_*_steps.zip"))


# ---------------------------------------------------------------------------------------------- persistence


def _obs(env_id: str, n: int = 5) -> np.ndarray:
    env = make_vec_env(env_id, n_envs=n, seed=1)
    return env.reset()


@pytest.mark.parametrize("algo", [PPO, A2C])
def test_save_load_round_trip_gives_same_actions(algo, tmp_path):
    model = algo("MlpPolicy", env="Pendulum-v1", seed=0, n_steps=32)
    model.learn(64)
    model.save(tmp_path / "model.zip")
    loaded = algo.load(tmp_path / "model.zip", device="cpu")
    obs = _obs("Pendulum-v1")
    np.testing.assert_allclose(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
    assert loaded.num_timesteps == model.num_timesteps == 64
    assert loaded.hparams["n_steps"] == 32
    params = loaded.get_parameters()
    assert set(params) == {"policy", "policy.optimizer"}
    fresh = algo("MlpPolicy", env="Pendulum-v1", seed=1, n_steps=32)
    fresh.set_parameters(params)
    np.testing.assert_allclose(fresh.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])


def test_loads_a_model_saved_by_sb3(tmp_path):
    theirs = sb3.PPO("MlpPolicy", "CartPole-v1", n_steps=64, seed=0)
    theirs.save(tmp_path / "sb3.zip")
    ours = PPO.load(tmp_path / "sb3.zip", trusted=True)  # SB3 pickles its spaces
    obs = _obs("CartPole-v1")
    np.testing.assert_array_equal(ours.predict(obs, deterministic=True)[0], theirs.predict(obs, deterministic=True)[0])
    assert ours.n_steps == 64


def test_checkpoint_resume_continues_timesteps_optimizer_and_schedules(tmp_path):
    def run(max_steps: int, ckpt_path=None, recorder=None):
        model = PPO("MlpPolicy", seed=0, learning_rate=LinearSchedule(1e-3, 0.0, 1.0), **SMALL)
        checkpoint = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True, every_n_epochs=1)
        trainer = RLTrainer(
            max_steps=max_steps,
            callbacks=[checkpoint],
            enable_checkpointing=True,
            default_root_dir=tmp_path,
            enable_progress_bar=False,
            rl_callback=recorder,
        )
        trainer.fit(model, datamodule=RLEnvDataModule("CartPole-v1"), ckpt_path=ckpt_path)
        return model, trainer

    run(256)
    last = tmp_path / "ckpt" / "last.ckpt"
    saved = torch.load(last, weights_only=True)  # plain data: loads without unpickling code
    recorder = Recorder()
    resumed, trainer = run(512, ckpt_path=last, recorder=recorder)
    assert recorder.first_num_timesteps == 256
    assert resumed.num_timesteps == trainer.rl_num_timesteps == 512
    assert trainer.rl_budget_reached and trainer.rl_progress == 1.0
    assert recorder.events["rollout_start"] == 4  # only the remaining budget was collected
    state = saved["optimizer_states"][0]["state"]
    assert state, "Adam moments are part of the checkpoint"
    # the learning-rate schedule continues from the restored progress: lr = 1e-3 * (1 - step / 512); as in SB3, the
    # dump after a rollout holds the previous update's values, so the first one (kept in the checkpoint) is the
    # last update of the 256-step fit, at the end of its own schedule
    logged = pd.read_csv(trainer.logger.log_dir + "/metrics.csv")
    assert list(logged["step"]) == [320, 384, 448, 512]
    expected = np.where(logged["step"] == 320, 0.0, 1e-3 * (1 - (logged["step"] - 64) / 512))
    np.testing.assert_allclose(logged["train/learning_rate"], expected, atol=1e-9)
    restored = PPO.load_from_checkpoint(last)  # the resumed run's own last checkpoint
    obs = _obs("CartPole-v1")
    assert restored.num_timesteps == 512
    np.testing.assert_array_equal(
        restored.predict(obs, deterministic=True)[0], resumed.predict(obs, deterministic=True)[0]
    )


def test_second_learn_continues_count_and_logged_curve(tmp_path):
    model = PPO("MlpPolicy", env="CartPole-v1", seed=0, **SMALL)
    model.learn(128, default_root_dir=tmp_path)
    model.learn(128, reset_num_timesteps=False, default_root_dir=tmp_path)
    assert model.num_timesteps == 256
    files = list(tmp_path.rglob("metrics.csv"))
    assert len(files) == 1
    assert list(pd.read_csv(files[0])["step"]) == [64, 128, 192, 256]
    model.learn(64)
    assert model.num_timesteps == 64


# ---------------------------------------------------------------------------------------------- predict


@pytest.mark.parametrize(
    ("make_env", "policy"),
    [
        (lambda: IdentityEnv(3), "MlpPolicy"),
        (lambda: IdentityEnvBox(-1, 1), "MlpPolicy"),
        (lambda: IdentityEnvMultiBinary(3), "MlpPolicy"),
        (lambda: gym.make("CartPole-v1"), "MlpPolicy"),
        (lambda: SimpleMultiObsEnv(random_start=False), "MultiInputPolicy"),
    ],
)
def test_predict_single_and_batched(make_env, policy):
    env = make_env()
    model = PPO(policy, env=make_env(), n_steps=16, batch_size=16, n_epochs=1, seed=0)
    model.learn(32)
    obs, _ = env.reset(seed=0)
    action, state = model.predict(obs, deterministic=True)
    assert state is None
    assert env.action_space.contains(action.astype(env.action_space.dtype) if hasattr(action, "astype") else action)
    batched = {k: np.stack([v, v]) for k, v in obs.items()} if isinstance(obs, dict) else np.stack([obs, obs])
    actions, _ = model.predict(batched, deterministic=True)
    assert len(actions) == 2
    np.testing.assert_allclose(actions[0], action, rtol=1e-5, atol=1e-6)


def test_box_actions_are_clipped_like_sb3():
    model = PPO("MlpPolicy", env="Pendulum-v1", seed=0, policy_kwargs=dict(log_std_init=3.0))
    actions, _ = model.predict(_obs("Pendulum-v1", 64))
    assert np.all(actions <= 2.0) and np.all(actions >= -2.0) and np.any(np.abs(actions) == 2.0)


# ---------------------------------------------------------------------------------------------- bad input


def test_bad_inputs_fail_before_training():
    with pytest.raises(ValueError, match=r"policy: unknown policy 'MlpPolcy' for PPO; valid choices: CnnPolicy, Mlp"):
        PPO("MlpPolcy")
    with pytest.raises(ValueError, match=r"env: unknown environment id 'CartPol-v1'; did you mean 'CartPole-v1'"):
        PPO("MlpPolicy").learn(100, env="CartPol-v1")
    with pytest.raises(ValueError, match=r"env: unknown environment id"):
        RLEnvDataModule("Pendulm-v1")
    with pytest.raises(ValueError, match=r"n_steps: n_steps \* n_envs must be > 1"):
        PPO("MlpPolicy", n_steps=1).learn(100, env="CartPole-v1")
    with pytest.raises(ValueError, match=r"total_timesteps: must be > 0"):
        PPO("MlpPolicy").learn(0, env="CartPole-v1")
    with pytest.raises(ValueError, match=r"max_steps: the env-step budget must be > 0"):
        RLTrainer(max_steps=-5)
    with pytest.raises(ValueError, match=r"batch_size: must be > 1"):
        PPO("MlpPolicy", batch_size=1)
    with pytest.raises(ValueError, match=r"gamma: must be in \[0, 1\]"):
        A2C("MlpPolicy", gamma=1.5)
    tuple_env = gym.make("CartPole-v1")
    tuple_env.observation_space = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3)))
    with pytest.raises(ValueError, match=r"env: PPO does not support the observation space Tuple"):
        PPO("MlpPolicy").check_env(make_vec_env(lambda: tuple_env))


def test_batch_size_not_dividing_rollout_warns():
    with pytest.warns(UserWarning, match=r"mini-batch size of 48, but .*n_steps \* n_envs = 64"):
        PPO("MlpPolicy", env="CartPole-v1", n_steps=64, batch_size=48, n_epochs=1).learn(64)


def test_trainer_refuses_dataloaders_and_foreign_datamodules():
    trainer = RLTrainer(max_steps=64, logger=False)
    model = PPO("MlpPolicy", **SMALL)
    with pytest.raises(TypeError, match="train_dataloaders/val_dataloaders"):
        trainer.fit(model, datamodule=RLEnvDataModule("CartPole-v1"), train_dataloaders=[1])
    with pytest.raises(TypeError, match=r"datamodule: RLTrainer\.fit needs an RLEnvDataModule"):
        trainer.fit(model, datamodule=object())
    with pytest.raises(ValueError, match=r"max_steps: RLTrainer\.fit needs an env-step budget"):
        RLTrainer(logger=False).fit(model, datamodule=RLEnvDataModule("CartPole-v1"))


# ---------------------------------------------------------------------------------------------- datamodule


class ClosingEnv(gym.Wrapper):
    closed = 0

    def close(self):
        ClosingEnv.closed += 1
        super().close()


def test_datamodule_builds_evaluates_persists_and_closes(tmp_path):
    ClosingEnv.closed = 0
    dm = RLEnvDataModule(
        train_env=lambda: ClosingEnv(gym.make("CartPole-v1")), val_env="CartPole-v1", n_envs=2, n_eval_episodes=3
    )
    for hook in (dm.train_dataloader, dm.val_dataloader, dm.test_dataloader, dm.predict_dataloader):
        with pytest.raises(TypeError, match="RLEnvDataModule exposes envs"):
            hook()
    with pytest.raises(ValueError, match="stage: unknown stage"):
        dm.get_env("train")  # type: ignore[arg-type]
    assert dm.get_env("fit", resolve=False) is None
    assert dm.get_env("fit").num_envs == 2
    model = PPO("MlpPolicy", seed=0, **SMALL)
    RLTrainer(max_steps=128, logger=False, enable_progress_bar=False).fit(model, datamodule=dm)
    assert ClosingEnv.closed == 2, "envs the datamodule built are closed on teardown"
    results = RLTrainer(logger=False, enable_progress_bar=False).validate(model, datamodule=dm, verbose=False)
    assert set(results[0]) >= {"eval/mean_reward", "eval/std_reward", "eval/mean_ep_length"}
    state = dm.state_dict()
    json.dumps(state)  # specs only, never live envs
    assert state["env_ids"] == {"fit": None, "validate": "CartPole-v1", "test": None, "predict": None}
    restored = RLEnvDataModule()
    restored.load_state_dict(state)
    assert restored.get_env("validate") is not None and restored.n_eval_episodes == 3


def test_datamodule_closes_envs_on_exception():
    ClosingEnv.closed = 0
    dm = RLEnvDataModule(train_env=lambda: ClosingEnv(gym.make("CartPole-v1")))

    class Boom(BaseCallback):
        def _on_step(self) -> bool:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        RLTrainer(max_steps=128, logger=False, rl_callback=Boom()).fit(PPO("MlpPolicy", **SMALL), datamodule=dm)
    assert ClosingEnv.closed == 1
    assert dm.get_env("fit", resolve=False) is None


def test_test_stage_and_hparams():
    model = PPO("MlpPolicy", env="CartPole-v1", n_steps=32, clip_range=0.1)
    assert model.hparams["clip_range"] == 0.1 and model.hparams["n_steps"] == 32 and "env" not in model.hparams
    out = RLTrainer(logger=False).test(model, datamodule=RLEnvDataModule(test_env="CartPole-v1"), verbose=False)
    assert out[0]["eval/mean_ep_length"] > 0


@pytest.mark.parametrize(
    ("algo", "kwargs", "steps_per_rollout"),
    [(PPO, dict(n_steps=64, batch_size=32, n_epochs=2), 4), (A2C, dict(n_steps=16), 1)],
)
def test_every_rollout_is_trained_on(algo, kwargs, steps_per_rollout):
    """Regression: Lightning reads iterables during setup; the first rollout must still get its updates."""
    model = algo("MlpPolicy", env="CartPole-v1", seed=0, policy_kwargs=dict(optimizer_class=torch.optim.Adam), **kwargs)
    model.learn(kwargs["n_steps"] * 4)
    state = next(iter(model.policy.optimizer.state.values()))
    assert int(state["step"]) == 4 * steps_per_rollout
    assert model._n_updates == 4 * kwargs.get("n_epochs", 1)


def test_target_kl_stops_the_update_early():
    model = PPO("MlpPolicy", env="CartPole-v1", n_steps=64, batch_size=16, n_epochs=10, target_kl=1e-9, seed=0)
    model.learn(128)
    # each rollout stops in its first epoch, before applying the minibatch that crossed the limit
    assert model._n_updates == 2
    state = model.policy.optimizer.state
    assert not state or all(int(s["step"]) <= 2 for s in state.values())


def test_target_kl_stops_as_sb3_between_epochs(monkeypatch):
    """SB3 breaks out of its epochs at the stop: the next epoch is neither counted (``n_updates``) nor given a
    minibatch order (``np.random.permutation``). Here a rollout stops at its epoch's last minibatch, where lit_sb3
    used to start the next epoch before it saw the stop (one update and one permutation ahead of SB3)."""
    settings = {"n_steps": 32, "batch_size": 32, "n_epochs": 4, "target_kl": 5e-5, "seed": 3}
    permutation = np.random.permutation
    runs = []
    for make in (
        lambda env: PPO("MlpPolicy", env=env, policy_kwargs=sb3_parity(), **settings),
        lambda env: sb3.PPO("MlpPolicy", env, **settings),
    ):
        draws = []
        monkeypatch.setattr(np.random, "permutation", lambda n, draws=draws: draws.append(n) or permutation(n))
        model = make(make_vec_env("CartPole-v1", n_envs=4)).learn(384)
        runs.append((len(draws), model._n_updates, np.random.get_state(legacy=True)[2]))
    assert runs[0][1] < 3 * 4  # target_kl stopped rollouts
    assert runs[0] == runs[1]


def test_gsde_ppo_logs_std_and_resamples_noise(tmp_path):
    model = PPO(
        "MlpPolicy", env="Pendulum-v1", n_steps=64, batch_size=64, n_epochs=1, use_sde=True, sde_sample_freq=8, seed=0
    )
    model.learn(128, default_root_dir=tmp_path)
    metrics = pd.read_csv(next(tmp_path.rglob("metrics.csv")))
    # the first dump comes before the first update (as in SB3)
    assert "train/std" in metrics.columns and metrics["train/std"].iloc[1:].notna().all()


def test_progress_bar_counts_env_steps(capsys):
    model = PPO("MlpPolicy", n_steps=64, batch_size=64, n_epochs=1)
    RLTrainer(max_steps=256, logger=False).fit(model, datamodule=RLEnvDataModule("CartPole-v1", n_envs=2))
    assert "256/256" in capsys.readouterr().err


def test_env_property_follows_the_trainer():
    model = PPO("MlpPolicy", n_steps=64, batch_size=64, n_epochs=1)
    assert model.env is None and model.get_env() is None
    seen = []

    class Peek(BaseCallback):
        def _on_step(self) -> bool:
            seen.append(self.model.env)
            return True

    RLTrainer(max_steps=64, logger=False, rl_callback=Peek()).fit(model, datamodule=RLEnvDataModule("CartPole-v1"))
    assert seen[0] is not None and seen[0].num_envs == 1
    assert model.env is None  # the datamodule released its env at teardown


def test_sb3_loads_a_model_saved_by_lit_sb3(tmp_path):
    ours = PPO("MlpPolicy", env="CartPole-v1", n_steps=64, seed=0)
    ours.save(tmp_path / "ours.zip")
    theirs = sb3.PPO.load(tmp_path / "ours.zip", device="cpu")
    obs = _obs("CartPole-v1")
    np.testing.assert_array_equal(theirs.predict(obs, deterministic=True)[0], ours.predict(obs, deterministic=True)[0])


def test_progress_bar_shows_evaluation_returns(capsys):
    import gymnasium as gym
    from stable_baselines3.common.callbacks import EvalCallback

    model = PPO("MlpPolicy", n_steps=64, batch_size=64, n_epochs=1, seed=0)
    evaluation = EvalCallback(gym.make("CartPole-v1"), eval_freq=64, n_eval_episodes=2, verbose=0)
    RLTrainer(max_steps=256, logger=False, rl_callback=evaluation).fit(model, datamodule=RLEnvDataModule("CartPole-v1"))
    assert f"eval={evaluation.last_mean_reward:.1f}" in capsys.readouterr().err
