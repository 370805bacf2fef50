"""Off-policy API: bases and exports, bad input, persistence, checkpoint resume, callbacks, HER."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback
from stable_baselines3.common.envs import BitFlippingEnv
from stable_baselines3.common.noise import NormalActionNoise

from lit_sb3 import DDPG, DQN, SAC, TD3, HerReplayBuffer, RLEnvDataModule, RLTrainer
from lit_sb3.common.off_policy import OffPolicyAlgorithm

TINY = {"net_arch": [8]}

# ---------------------------------------------------------------------- bases and exports (signatures: test_spec.py)


@pytest.mark.parametrize("cls", [SAC, TD3, DDPG, DQN], ids=lambda c: c.__name__)
def test_bases(cls):
    assert issubclass(cls, OffPolicyAlgorithm) and (cls is not DDPG or issubclass(DDPG, TD3))


def test_sac_module_exports():
    from lit_sb3.algorithms.sac import Actor, CnnPolicy, MultiInputPolicy, SACPolicy  # noqa: F401

    assert issubclass(CnnPolicy, SACPolicy) and issubclass(MultiInputPolicy, SACPolicy)


# ---------------------------------------------------------------------- bad input, refused before training


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: SAC("MlpPolicy", env="CartPole-v1"), r"env: SAC does not support the action space.*supported: Box"),
        (lambda: TD3("MlpPolicy", env="CartPole-v1"), r"env: TD3 does not support the action space"),
        (lambda: DDPG("MlpPolicy", env="CartPole-v1"), r"env: DDPG does not support the action space"),
        (lambda: DQN("MlpPolicy", env="Pendulum-v1"), r"env: DQN does not support the action space.*Discrete"),
        (lambda: SAC("MlpPolicy", gradient_steps=1.5), r"gradient_steps: must be an int"),
        (lambda: SAC("MlpPolicy", train_freq=(2, "epoch")), r"train_freq: unit must be one of 'step', 'episode'"),
        (lambda: TD3("MlpPolicy", learning_starts=-1), r"learning_starts: must be an int >= 0"),
        (lambda: TD3("MlpPolicy", learning_starts=1.5), r"learning_starts: must be an int >= 0"),
        (lambda: SAC("MlpPolicy", ent_coef="automatic"), r"ent_coef: must be a float >= 0, 'auto'"),
        (
            lambda: SAC("MlpPolicy", policy_kwargs=TINY, replay_buffer_class=HerReplayBuffer, env="Pendulum-v1"),
            r"replay_buffer_class: HerReplayBuffer needs a goal-conditioned env",
        ),
        (lambda: SAC("FooPolicy"), r"policy: unknown policy 'FooPolicy' for SAC; valid choices"),
    ],
)
def test_bad_input_fails_fast_with_one_line(make, match):
    with pytest.raises(ValueError, match=match) as info:
        make()
    assert "\n" not in str(info.value)


def test_episode_train_freq_refused_with_several_envs():
    model = SAC("MlpPolicy", train_freq=(1, "episode"), policy_kwargs=TINY)
    dm = RLEnvDataModule(train_env="Pendulum-v1", n_envs=2)
    with pytest.raises(ValueError, match="train_freq: with 2 envs the unit must be 'step'"):
        RLTrainer(max_steps=10, logger=False, enable_progress_bar=False).fit(model, datamodule=dm)


# ---------------------------------------------------------------------- training mechanics


def test_learning_starts_gradient_steps_and_budget():
    model = TD3(
        "MlpPolicy",
        env="Pendulum-v1",
        learning_starts=50,
        train_freq=5,
        gradient_steps=-1,
        batch_size=16,
        policy_kwargs=TINY,
        seed=0,
    )
    model.learn(100)
    assert model.num_timesteps == 100
    assert model._n_updates == 50  # -1: one update per env step collected once past learning_starts
    assert model.replay_buffer.pos == 100


def test_episode_train_freq_action_noise_and_logged_metrics(capsys):
    model = SAC(
        "MlpPolicy",
        env="Pendulum-v1",
        train_freq=(1, "episode"),
        gradient_steps=2,
        learning_starts=0,
        batch_size=8,
        policy_kwargs=TINY,
        seed=0,
        verbose=1,
        action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
    )
    model.learn(400, log_every_n_steps=1)
    assert model.num_timesteps == 400 and model._episode_num == 2 and model._n_updates == 4
    out = capsys.readouterr().out
    for key in (
        "train/",
        "actor_loss",
        "critic_loss",
        "ent_coef",
        "ent_coef_loss",
        "n_updates",
        "rollout/",
        "ep_rew_mean",
        "time/",
        "episodes",
    ):
        assert f"| {key}" in out.replace("|    ", "| "), key
    dqn = DQN("MlpPolicy", learning_starts=10, policy_kwargs=TINY, seed=0, verbose=1)
    dqn.learn(200, env="CartPole-v1")
    assert "exploration_rate" in capsys.readouterr().out


def test_multiple_envs_and_n_step_buffer():
    from stable_baselines3.common.buffers import NStepReplayBuffer

    model = SAC("MlpPolicy", n_steps=3, learning_starts=20, batch_size=8, policy_kwargs=TINY, seed=0)
    trainer = RLTrainer(max_steps=60, logger=False, enable_progress_bar=False)
    trainer.fit(model, datamodule=RLEnvDataModule(train_env="Pendulum-v1", n_envs=2))
    assert isinstance(model.replay_buffer, NStepReplayBuffer) and model.replay_buffer.n_envs == 2
    assert model.num_timesteps == 60 and model._n_updates > 0


def test_sb3_callback_sees_every_step_and_can_stop():
    class StopAt(BaseCallback):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def _on_step(self) -> bool:
            self.calls += 1
            return self.num_timesteps < 30

    callback = StopAt()
    model = DQN("MlpPolicy", env="CartPole-v1", learning_starts=0, policy_kwargs=TINY, seed=0)
    model.learn(1000, callback=callback)
    assert model.num_timesteps == 30 and callback.calls == 30  # SB3: called at every env step, stops at once


def test_save_load_round_trip_and_sb3_interop(tmp_path):
    import stable_baselines3 as sb3

    model = SAC("MlpPolicy", env="Pendulum-v1", learning_starts=10, batch_size=8, policy_kwargs=TINY, seed=0)
    model.learn(40)
    model.save(tmp_path / "sac.zip")
    loaded = SAC.load(tmp_path / "sac.zip", device="cpu")
    obs = np.zeros((1, 3), dtype=np.float32)
    assert np.allclose(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
    assert torch.equal(loaded.log_ent_coef.data, model.log_ent_coef.data)
    assert loaded.num_timesteps == 40
    # a zip written by SB3 loads into ours
    ref = sb3.SAC("MlpPolicy", "Pendulum-v1", policy_kwargs=dict(TINY), seed=0, device="cpu")  # SB3 mutates it
    ref.policy.load_state_dict(model.policy.state_dict())
    ref.save(tmp_path / "ref.zip")
    again = SAC.load(tmp_path / "ref.zip", device="cpu", trusted=True)  # SB3 pickles its spaces
    assert np.allclose(again.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0])


def test_replay_buffer_save_load(tmp_path):
    model = TD3("MlpPolicy", env="Pendulum-v1", learning_starts=10, batch_size=8, policy_kwargs=TINY, seed=0)
    model.learn(30)
    model.save_replay_buffer(tmp_path / "buffer")
    other = TD3("MlpPolicy", env="Pendulum-v1", policy_kwargs=TINY)
    other.load_replay_buffer(tmp_path / "buffer.pkl")
    assert other.replay_buffer.pos == 30
    assert np.array_equal(other.replay_buffer.observations, model.replay_buffer.observations)


@pytest.mark.filterwarnings(
    "ignore:.*no pre-optimization state was saved.*", "ignore:.*callbacks used to create the checkpoint.*"
)
def test_checkpoint_resume_restores_counters_optimizers_entropy_and_buffer(tmp_path):
    def make():
        model = SAC("MlpPolicy", learning_starts=10, batch_size=8, policy_kwargs=TINY, seed=0)
        model.checkpoint_replay_buffer = True
        return model

    model = make()
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)
    trainer = RLTrainer(
        max_steps=50, logger=False, enable_progress_bar=False, enable_checkpointing=True, callbacks=[ckpt]
    )
    trainer.fit(model, datamodule=RLEnvDataModule(train_env="Pendulum-v1"))
    path = tmp_path / "last.ckpt"
    assert path.exists()
    state = torch.load(path, weights_only=False)
    saved_steps = state["lit_sb3"]["num_timesteps"]
    assert saved_steps == 50

    resumed = make()
    captured = {}

    class Peek(BaseCallback):
        def _on_training_start(self):
            captured["steps"] = self.model.num_timesteps
            captured["log_ent_coef"] = self.model.log_ent_coef.detach().clone()
            captured["adam_step"] = self.model.policy.actor.optimizer.state_dict()["state"][0]["step"].clone()
            captured["buffer_pos"] = self.model.replay_buffer.pos
            captured["target"] = {k: v.clone() for k, v in self.model.policy.critic_target.state_dict().items()}

        def _on_step(self):
            return True

    trainer = RLTrainer(max_steps=60, logger=False, enable_progress_bar=False, rl_callback=Peek())
    trainer.fit(resumed, datamodule=RLEnvDataModule(train_env="Pendulum-v1"), ckpt_path=str(path))
    assert captured["steps"] == 50
    assert torch.equal(captured["log_ent_coef"], model.log_ent_coef.detach())
    assert captured["adam_step"].item() == model.policy.actor.optimizer.state_dict()["state"][0]["step"].item()
    assert captured["buffer_pos"] == 50
    for key, value in model.policy.critic_target.state_dict().items():
        assert torch.equal(captured["target"][key], value)
    assert resumed.num_timesteps == 60


def test_sb3_checkpoint_callback_saves_zip(tmp_path):
    model = DDPG("MlpPolicy", env="Pendulum-v1", learning_starts=10, batch_size=8, policy_kwargs=TINY, seed=0)
    model.learn(40, callback=CheckpointCallback(save_freq=20, save_path=str(tmp_path), name_prefix="ddpg"))
    assert sorted(p.name for p in tmp_path.glob("ddpg_*.zip")) == ["ddpg_20_steps.zip", "ddpg_40_steps.zip"]
    assert DDPG.load(tmp_path / "ddpg_40_steps.zip").policy.critic.n_critics == 1


def test_her_with_dqn_on_bit_flipping():
    env = BitFlippingEnv(n_bits=4, continuous=False, max_steps=4)
    model = DQN(
        "MultiInputPolicy",
        env=env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs={"n_sampled_goal": 2},
        learning_starts=20,
        batch_size=8,
        policy_kwargs=TINY,
    )
    model.learn(60)
    assert isinstance(model.replay_buffer, HerReplayBuffer) and model._n_updates > 0
    with pytest.raises(ValueError, match="goal_selection_strategy: must be one of"):
        HerReplayBuffer(10, env.observation_space, env.action_space, env=None, goal_selection_strategy="sometimes")
