"""ARS as the spec fixes it and as users drive it: exports, bad input, env-step accounting, logged metrics,
schedules, callbacks, persistence (SB3 zips both ways, Lightning checkpoints) and parallel evaluation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import sb3_contrib
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from sb3_contrib.common.vec_env import AsyncEval
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import IdentityEnvMultiDiscrete, SimpleMultiObsEnv
from stable_baselines3.common.utils import LinearSchedule
from torch.nn.utils import parameters_to_vector

import lit_sb3
from lit_sb3 import ARS, RLEnvDataModule, RLTrainer
from lit_sb3.algorithms import ars as ars_module
from lit_sb3.common.base import BaseAlgorithm
from lit_sb3.common.on_policy import OnPolicyAlgorithm
from tests.lit_sb3.algorithms.ars_envs import normalized_cartpole


class EpisodeSteps(BaseCallback):
    """Adds up the episode lengths of every iteration and counts the callback events."""

    def __init__(self, stop_after: int | None = None) -> None:
        super().__init__()
        self.episode_steps = 0
        self.steps = 0
        self.iterations = 0
        self.stop_after = stop_after

    def _on_step(self) -> bool:
        self.steps += 1
        return self.stop_after is None or self.steps < self.stop_after

    def _on_rollout_end(self) -> None:
        self.iterations += 1
        self.episode_steps += sum(int(ep["l"]) for ep in self.model.ep_info_buffer)


def _weights(model) -> torch.Tensor:
    return parameters_to_vector(model.policy.parameters()).detach().clone()


def _obs(n: int = 5) -> np.ndarray:
    return make_vec_env("CartPole-v1", n_envs=n, seed=1).reset()


# ---------------------------------------------------------------------------------------------- spec


def test_exports_bases_and_policies():
    assert lit_sb3.ARS is ars_module.ARS and "ARS" in lit_sb3.__all__
    assert issubclass(ARS, BaseAlgorithm) and not issubclass(ARS, OnPolicyAlgorithm)
    assert ars_module.MlpPolicy is sb3_contrib.ars.MlpPolicy and ars_module.LinearPolicy is sb3_contrib.ars.LinearPolicy
    assert set(ARS.policy_aliases) == {"LinearPolicy", "MlpPolicy"}


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(n_delta=0), "n_delta: must be >= 1"),
        (dict(n_top=0), "n_top"),
        (dict(n_eval_episodes=0), "n_eval_episodes"),
        (dict(policy="CnnPolicy"), "policy: unknown policy 'CnnPolicy'"),
        (dict(env=SimpleMultiObsEnv()), "does not support the observation space Dict"),
        (dict(env=IdentityEnvMultiDiscrete(3)), "does not support the action space MultiDiscrete"),
    ],
)
def test_bad_input_fails_at_construction_with_one_line(kwargs, match):
    policy = kwargs.pop("policy", "LinearPolicy")
    with pytest.raises(ValueError, match=match) as err:
        ARS(policy, **kwargs)
    assert "\n" not in str(err.value)


def test_bad_env_or_async_eval_fails_before_training():
    model = ARS("LinearPolicy")
    with pytest.raises(ValueError, match="action space MultiDiscrete"):
        model.learn(100, env=IdentityEnvMultiDiscrete(3))
    with pytest.raises(TypeError, match="async_eval: expected an sb3_contrib AsyncEval"):
        model.learn(100, env="CartPole-v1", async_eval="workers")
    assert model.num_timesteps == 0 and model.policy is None


# ---------------------------------------------------------------------------------------------- training


def test_policy_without_optimizer_and_zeroed_weights():
    model = ARS("MlpPolicy", env="Pendulum-v1", policy_kwargs=dict(net_arch=[4]), seed=0)
    assert set(model.get_parameters()) == {"policy"}
    assert model.n_params == 3 * 4 + 4 + 4 * 1 + 1 and torch.all(_weights(model) == 0)
    assert torch.any(_weights(ARS("MlpPolicy", env="Pendulum-v1", zero_policy=False, seed=0)) != 0)
    assert model.configure_optimizers() is None


def test_every_candidate_step_is_counted_and_sb3_metrics_are_logged(tmp_path):
    counter = EpisodeSteps()
    model = ARS("LinearPolicy", env="CartPole-v1", n_delta=3, n_eval_episodes=2, seed=0)
    model.learn(1_500, callback=counter, default_root_dir=tmp_path)
    assert model.num_timesteps >= 1_500
    assert model.num_timesteps == counter.episode_steps == counter.steps  # one env: one callback step per env step
    assert counter.iterations == model._n_updates
    assert len(model.ep_info_buffer) == 2 * 3 * 2  # the last iteration's episodes only
    logged = pd.read_csv(next(tmp_path.rglob("metrics.csv")))
    for key in (
        "rollout/return_std",
        "train/iterations",
        "train/delta_std",
        "train/learning_rate",
        "train/step_size",
        "rollout/ep_rew_mean",
        "rollout/ep_len_mean",
        "time/fps",
    ):
        assert key in logged.columns, key
    assert list(logged["train/iterations"]) == list(range(model._n_updates))
    assert logged["step"].iloc[-1] == model.num_timesteps


def test_several_envs_count_every_env_step():
    counter = EpisodeSteps()
    model = ARS("LinearPolicy", env=make_vec_env("CartPole-v1", n_envs=2, seed=0), n_delta=2, n_eval_episodes=2)
    model.learn(400, callback=counter)
    assert model.num_timesteps == 2 * counter.steps  # each vector step is two env steps


def test_schedules_follow_the_progress_before_each_iteration(tmp_path):
    lr, std = LinearSchedule(0.02, 0.0, 1.0), LinearSchedule(0.1, 0.01, 1.0)
    model = ARS("LinearPolicy", env="CartPole-v1", n_delta=2, learning_rate=lr, delta_std=std, seed=1)
    model.learn(2_000, default_root_dir=tmp_path)
    logged = pd.read_csv(next(tmp_path.rglob("metrics.csv")))
    progress = 1.0 - np.concatenate([[0], logged["step"].to_numpy()[:-1]]) / 2_000
    np.testing.assert_allclose(logged["train/learning_rate"], [lr(p) for p in progress], rtol=1e-6)
    np.testing.assert_allclose(logged["train/delta_std"], [std(p) for p in progress], rtol=1e-6)


def test_callback_stop_aborts_the_iteration_without_an_update():
    model = ARS("LinearPolicy", env="CartPole-v1", n_delta=4, seed=0, zero_policy=False)
    before = _weights(model)
    model.learn(10_000, callback=EpisodeSteps(stop_after=30))  # stops inside the first iteration
    assert model.num_timesteps == 30 and model._n_updates == 0
    torch.testing.assert_close(_weights(model), before)


# ---------------------------------------------------------------------------------------------- persistence


def test_save_load_round_trip_and_set_parameters(tmp_path):
    model = ARS(
        "MlpPolicy",
        env="CartPole-v1",
        n_delta=3,
        n_top=2,
        delta_std=0.1,
        zero_policy=False,
        seed=0,
        policy_kwargs=dict(net_arch=[8]),
    )
    model.learn(500)
    model.save(tmp_path / "ars.zip")
    loaded = ARS.load(tmp_path / "ars.zip")
    obs = _obs()
    np.testing.assert_array_equal(loaded.predict(obs)[0], model.predict(obs)[0])
    assert (loaded.n_delta, loaded.n_top, loaded.delta_std_schedule(1.0)) == (3, 2, 0.1)
    assert loaded.num_timesteps == model.num_timesteps and loaded._n_updates == model._n_updates
    fresh = ARS("MlpPolicy", env="CartPole-v1", policy_kwargs=dict(net_arch=[8]))
    fresh.set_parameters(str(tmp_path / "ars.zip"))
    torch.testing.assert_close(_weights(fresh), _weights(model))


def test_zips_load_both_ways_with_sb3_contrib(tmp_path):
    ours = ARS("LinearPolicy", env="CartPole-v1", n_delta=2, delta_std=0.03, zero_policy=False, seed=0)
    ours.save(tmp_path / "ours.zip")
    theirs = sb3_contrib.ARS.load(tmp_path / "ours.zip", device="cpu")
    obs = _obs()
    np.testing.assert_array_equal(theirs.predict(obs)[0], ours.predict(obs)[0])
    assert (theirs.n_delta, theirs.n_top, theirs.pop_size, theirs.delta_std_schedule(1.0)) == (2, 2, 4, 0.03)

    trained = sb3_contrib.ARS("LinearPolicy", "CartPole-v1", n_delta=3, delta_std=0.07, seed=0)
    trained.learn(1_000)
    trained.save(tmp_path / "theirs.zip")
    back = ARS.load(tmp_path / "theirs.zip", trusted=True)  # sb3-contrib pickles its spaces
    np.testing.assert_array_equal(back.predict(obs)[0], trained.predict(obs)[0])
    assert (back.n_delta, back.delta_std_schedule(1.0), back.num_timesteps) == (3, 0.07, trained.num_timesteps)


def test_set_parameters_reads_linear_policies_of_old_sb3_contrib():
    model = ARS("LinearPolicy", env="CartPole-v1", zero_policy=False, seed=0)
    weight = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    model.set_parameters({"policy": {"action_net.weight": weight}})  # sb3-contrib < 1.7 naming
    torch.testing.assert_close(model.policy.action_net[0].weight, weight)


def test_checkpoint_resume_continues_weights_and_counters(tmp_path):
    def fit(max_steps: int, ckpt_path=None, counter=None):
        model = ARS("LinearPolicy", n_delta=2, seed=0)
        checkpoint = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True, every_n_epochs=1)
        trainer = RLTrainer(
            max_steps=max_steps,
            callbacks=[checkpoint],
            enable_checkpointing=True,
            default_root_dir=tmp_path,
            enable_progress_bar=False,
            rl_callback=counter,
        )
        trainer.fit(model, datamodule=RLEnvDataModule("CartPole-v1", seed=0), ckpt_path=ckpt_path)
        return model

    first = fit(400)
    last = tmp_path / "ckpt" / "last.ckpt"
    saved = torch.load(last, weights_only=True)  # plain data
    assert saved["lit_sb3"]["num_timesteps"] == first.num_timesteps
    restored = ARS.load_from_checkpoint(last)
    torch.testing.assert_close(_weights(restored), _weights(first))
    assert restored._n_updates == first._n_updates
    counter = EpisodeSteps()
    resumed = fit(first.num_timesteps + 400, ckpt_path=last, counter=counter)
    assert resumed.num_timesteps == first.num_timesteps + counter.episode_steps >= first.num_timesteps + 400
    assert resumed._n_updates == first._n_updates + counter.iterations


# ---------------------------------------------------------------------------------------------- parallel evaluation


def test_async_eval_runs_candidates_in_two_workers_and_counts_their_steps():
    train_env = normalized_cartpole()
    model = ARS("LinearPolicy", env=train_env, n_delta=4, seed=0)
    async_eval = AsyncEval([normalized_cartpole, normalized_cartpole], model.policy)
    counter = EpisodeSteps()
    model.learn(1_500, callback=counter, async_eval=async_eval)
    assert async_eval.closed  # learn closes it, as sb3-contrib does
    assert model.num_timesteps == counter.episode_steps >= 1_500
    # one callback step per round of the two workers' steps, as in sb3-contrib
    assert counter.episode_steps / 2 - counter.iterations <= counter.steps <= counter.episode_steps / 2
    assert counter.iterations == model._n_updates > 0
    # the workers' observation statistics were merged into the training env's VecNormalize
    assert train_env.obs_rms.count > counter.episode_steps / 2
