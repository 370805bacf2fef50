"""MaskablePPO, RecurrentPPO and TRPO as users drive them: the spec's API, persistence, checkpoints, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sb3_contrib
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from sb3_contrib.common.envs import InvalidActionEnvDiscrete, InvalidActionEnvMultiBinary
from stable_baselines3.common.env_util import make_vec_env

from lit_sb3 import PPO, TRPO, MaskablePPO, RecurrentPPO, RLEnvDataModule, RLTrainer
from lit_sb3.algorithms.ppo_mask import MaskablePPO as MaskablePPOFromModule
from lit_sb3.common.on_policy import OnPolicyAlgorithm
from lit_sb3.common.ppo_update import ClippedSurrogateUpdate


def masked_env(n_invalid: int = 5) -> InvalidActionEnvDiscrete:
    return InvalidActionEnvDiscrete(dim=10, n_invalid_actions=n_invalid)


def test_classes_sit_beside_ppo_on_the_on_policy_base():
    assert MaskablePPOFromModule is MaskablePPO
    for cls in (MaskablePPO, RecurrentPPO):  # PPO's update, not PPO: a change to PPO's class reaches neither
        assert cls.__bases__ == (ClippedSurrogateUpdate,) and PPO not in cls.__mro__
    assert TRPO.__bases__ == (OnPolicyAlgorithm,)


# ---------------------------------------------------------------------- MaskablePPO


class RecordActions(InvalidActionEnvDiscrete):
    """Fails the run on the first masked action it receives."""

    def step(self, action):
        assert self.action_masks()[int(action)], f"masked action {action} was taken"
        return super().step(action)


def test_maskable_ppo_never_takes_a_masked_action_in_training_or_evaluation():
    model = MaskablePPO("MlpPolicy", n_steps=64, batch_size=32, n_epochs=2, seed=0)
    model.learn(512, env=RecordActions(dim=10, n_invalid_actions=8))
    data = RLEnvDataModule(
        train_env=RecordActions(dim=10, n_invalid_actions=8), val_env=RecordActions(dim=10, n_invalid_actions=8)
    )
    RLTrainer(enable_progress_bar=False).validate(model, datamodule=data)


def test_maskable_predict_respects_the_given_masks():
    model = MaskablePPO("MlpPolicy", env=masked_env(), seed=0)
    obs = np.stack([masked_env().observation_space.sample() for _ in range(20)])
    masks = np.zeros((20, 10), dtype=bool)
    masks[:, 3] = True
    actions, _ = model.predict(obs, action_masks=masks)
    assert (actions == 3).all()


def test_maskable_ppo_refuses_envs_without_masks_unless_told():
    with pytest.raises(ValueError, match=r"^use_masking: the env has no action_masks\(\)"):
        MaskablePPO("MlpPolicy", n_steps=16).learn(32, env="CartPole-v1")
    model = MaskablePPO("MlpPolicy", n_steps=16, batch_size=16, n_epochs=1).learn(
        32, env="CartPole-v1", use_masking=False
    )
    assert model.num_timesteps == 32


def test_maskable_ppo_checkpoint_keeps_use_masking(tmp_path):
    model = MaskablePPO("MlpPolicy", n_steps=16, batch_size=16, n_epochs=1)
    model.use_masking = False  # what learn(use_masking=False) sets, for a run driven by RLTrainer
    trainer = RLTrainer(max_steps=32, default_root_dir=tmp_path, enable_progress_bar=False)
    trainer.fit(model, datamodule=RLEnvDataModule("CartPole-v1"))
    trainer.save_checkpoint(tmp_path / "model.ckpt")
    restored = MaskablePPO.load_from_checkpoint(tmp_path / "model.ckpt")
    assert restored.num_timesteps == 32 and restored.use_masking is False


def test_maskable_ppo_refuses_continuous_actions():
    with pytest.raises(ValueError, match="action space"):
        MaskablePPO("MlpPolicy", n_steps=16).learn(32, env="Pendulum-v1", use_masking=False)


def test_maskable_ppo_multibinary_masks():
    env = InvalidActionEnvMultiBinary(dims=4, n_invalid_actions=2)
    model = MaskablePPO("MlpPolicy", n_steps=32, batch_size=32, n_epochs=1, seed=0).learn(64, env=env)
    assert model.num_timesteps == 64


def test_maskable_save_load_and_sb3_contrib_interop(tmp_path):
    env = masked_env()
    model = MaskablePPO("MlpPolicy", n_steps=32, batch_size=32, n_epochs=1, seed=0).learn(64, env=env)
    obs = np.stack([env.observation_space.sample() for _ in range(8)])
    masks = np.stack([env.action_masks() for _ in range(8)])
    expected = model.predict(obs, deterministic=True, action_masks=masks)[0]
    model.save(tmp_path / "model.zip")
    for loaded in (MaskablePPO.load(tmp_path / "model.zip"), sb3_contrib.MaskablePPO.load(tmp_path / "model.zip")):
        np.testing.assert_array_equal(loaded.predict(obs, deterministic=True, action_masks=masks)[0], expected)


# ---------------------------------------------------------------------- RecurrentPPO


def test_recurrent_predict_returns_and_resets_the_lstm_state():
    model = RecurrentPPO("MlpLstmPolicy", env="CartPole-v1", seed=0, policy_kwargs={"lstm_hidden_size": 8})
    obs = np.zeros((2, 4), dtype=np.float32)
    _, state = model.predict(obs, episode_start=np.ones(2, dtype=bool))
    assert state[0].shape == (1, 2, 8)
    _, next_state = model.predict(obs, state=state, episode_start=np.zeros(2, dtype=bool))
    assert not np.allclose(next_state[0], state[0])  # the memory moves on
    _, reset_state = model.predict(obs, state=next_state, episode_start=np.ones(2, dtype=bool))
    np.testing.assert_allclose(reset_state[0], state[0], atol=1e-6)  # an episode start forgets it


def test_recurrent_train_is_the_sb3_update_and_train_mode_stays_nn_module():
    model = RecurrentPPO(
        "MlpLstmPolicy", n_steps=32, batch_size=32, n_epochs=1, seed=0, policy_kwargs={"lstm_hidden_size": 8}
    )
    model.learn(64, env="CartPole-v1")
    assert model.train(False) is model and not model.training and not model.policy.training
    assert model.eval() is model and not model.training
    before = [p.detach().clone() for p in model.policy.parameters()]
    assert model.train() is model and model.training  # learn() trained on its last rollout: only the mode
    assert all(torch.equal(a, b) for a, b in zip(before, model.policy.parameters()))
    env = model.get_env()
    model.collect_rollouts(env, None, model.rollout_buffer, model.n_steps)
    model.eval()
    assert model.train() is model and model.training and model.policy.training  # SB3's train(): an update
    assert any(not torch.equal(a, b) for a, b in zip(before, model.policy.parameters()))
    after = [p.detach().clone() for p in model.policy.parameters()]
    model.train()  # that rollout is used up
    assert all(torch.equal(a, b) for a, b in zip(after, model.policy.parameters()))
    fresh = RecurrentPPO("MlpLstmPolicy", env="CartPole-v1")
    assert fresh.train() is fresh and fresh.training  # no rollout yet: only the mode switch


def test_recurrent_ppo_refuses_a_memoryless_policy():
    from stable_baselines3.common.policies import ActorCriticPolicy

    with pytest.raises(ValueError, match=r"^policy: RecurrentPPO needs a RecurrentActorCriticPolicy"):
        RecurrentPPO(ActorCriticPolicy)


def test_recurrent_save_load_and_sb3_contrib_interop(tmp_path):
    model = RecurrentPPO(
        "MlpLstmPolicy", n_steps=32, batch_size=32, n_epochs=1, seed=0, policy_kwargs={"lstm_hidden_size": 8}
    ).learn(64, env="CartPole-v1")
    obs = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    starts = np.ones(3, dtype=bool)
    expected, state = model.predict(obs, episode_start=starts, deterministic=True)
    model.save(tmp_path / "model.zip")
    for loaded in (RecurrentPPO.load(tmp_path / "model.zip"), sb3_contrib.RecurrentPPO.load(tmp_path / "model.zip")):
        actions, loaded_state = loaded.predict(obs, episode_start=starts, deterministic=True)
        np.testing.assert_array_equal(actions, expected)
        np.testing.assert_allclose(loaded_state[0], state[0], atol=1e-6)


# ---------------------------------------------------------------------- TRPO


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cg_max_steps": 0}, "^cg_max_steps: must be >= 1, got 0"),
        ({"line_search_shrinking_factor": 1.0}, r"^line_search_shrinking_factor: must be in \(0, 1\)"),
        ({"target_kl": 0.0}, "^target_kl: must be > 0"),
        ({"sub_sampling_factor": 0}, "^sub_sampling_factor: must be >= 1"),
        ({"n_critic_updates": 0}, "^n_critic_updates: must be >= 1"),
    ],
)
def test_trpo_refuses_bad_hyperparameters_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TRPO("MlpPolicy", **kwargs)


def test_trpo_logs_sb3_contrib_metrics_and_keeps_inside_the_trust_region(tmp_path):
    model = TRPO("MlpPolicy", n_steps=256, batch_size=64, n_critic_updates=2, seed=0, target_kl=0.01)
    trainer = RLTrainer(max_steps=1024, default_root_dir=tmp_path, enable_progress_bar=False)
    trainer.fit(model, datamodule=RLEnvDataModule("CartPole-v1"))
    logged = pd.read_csv(trainer.logger.log_dir + "/metrics.csv")
    # as in sb3-contrib, each dump (after a rollout) holds the previous update's values: none in the first
    assert list(logged["step"]) == [256, 512, 768, 1024] and logged["train/n_updates"].tolist()[1:] == [1, 2, 3]
    logged = logged.iloc[1:]
    for key in (
        "policy_objective",
        "kl_divergence_loss",
        "is_line_search_success",
        "value_loss",
        "explained_variance",
        "learning_rate",
    ):
        assert logged[f"train/{key}"].notna().all(), key
    assert ((logged["train/kl_divergence_loss"] >= 0) & (logged["train/kl_divergence_loss"] < 0.01)).all()
    accepted = logged["train/is_line_search_success"] == 1.0
    assert accepted.any() and (logged.loc[accepted, "train/kl_divergence_loss"] > 0).all()


@pytest.mark.parametrize(
    "algo, policy, env",
    [
        (TRPO, "MlpPolicy", "CartPole-v1"),
        (RecurrentPPO, "MlpLstmPolicy", "CartPole-v1"),
        (MaskablePPO, "MlpPolicy", masked_env),
    ],
)
def test_checkpoint_resume_continues_the_count(tmp_path, algo, policy, env):
    def run(max_steps: int, ckpt_path=None):
        model = algo(policy, n_steps=64, batch_size=64, seed=0)
        checkpoint = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True, every_n_epochs=1)
        trainer = RLTrainer(
            max_steps=max_steps,
            callbacks=[checkpoint],
            enable_checkpointing=True,
            default_root_dir=tmp_path,
            enable_progress_bar=False,
        )
        trainer.fit(model, datamodule=RLEnvDataModule(env() if callable(env) else env), ckpt_path=ckpt_path)
        return model

    first = run(128)
    last = tmp_path / "ckpt" / "last.ckpt"
    torch.load(last, weights_only=True)  # plain data
    resumed = run(256, ckpt_path=last)
    assert first.num_timesteps == 128 and resumed.num_timesteps == 256
    restored = algo.load_from_checkpoint(last)
    assert restored.num_timesteps == 256
    for name, param in restored.policy.state_dict().items():
        assert torch.equal(param, resumed.policy.state_dict()[name]), name


def test_trpo_runs_on_several_envs_with_vec_env():
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    model = TRPO("MlpPolicy", n_steps=64, batch_size=32, n_critic_updates=1, seed=0).learn(256, env=env)
    assert model.num_timesteps == 256
