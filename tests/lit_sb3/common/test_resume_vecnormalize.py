"""Exact resume through a VecNormalize that normalizes rewards only (``norm_obs=False``, as the RL Zoo's PPO-LSTM on
CarRacing): SB3 then keeps no observation statistics (no ``obs_rms``), so a checkpoint holds the return statistics
alone and a resumed run continues from them."""

from __future__ import annotations

from pathlib import Path

import torch
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from lit_sb3 import PPO, RecurrentPPO
from tests.lit_sb3.common.test_exact_resume import StopAndSave, fit


def _reward_normalized() -> VecEnv:
    return VecNormalize(make_vec_env("CartPole-v1", n_envs=2, seed=5), norm_obs=False, norm_reward=True)


def _stop_and_resume(factory, tmp_path: Path) -> tuple:  # type: ignore[no-untyped-def]
    """The models of a whole run and of one stopped at 128 env steps and resumed, and their VecNormalize envs."""
    envs = [_reward_normalized() for _ in range(3)]
    whole = fit(factory(), envs[0], 256)
    ckpt = tmp_path / "stop.ckpt"
    fit(factory(), envs[1], 256, callbacks=[StopAndSave(128, ckpt)])
    resumed = fit(factory(), envs[2], 256, ckpt_path=ckpt)
    return (whole, resumed), (envs[0], envs[2])


def test_ppo_resumes_bit_identical_through_a_reward_only_vecnormalize(tmp_path: Path) -> None:
    (whole, resumed), normalizers = _stop_and_resume(
        lambda: PPO("MlpPolicy", n_steps=32, batch_size=32, n_epochs=2, seed=3), tmp_path
    )
    assert resumed.num_timesteps == whole.num_timesteps == 256
    for (key, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), f"{key} differs after resume"
    assert all("obs_rms" not in vars(n) for n in normalizers)  # SB3 keeps none with norm_obs=False
    assert normalizers[0].ret_rms.count == normalizers[1].ret_rms.count > 1  # the return statistics came back
    assert (normalizers[0].ret_rms.var == normalizers[1].ret_rms.var).all()


def test_recurrent_ppo_checkpoints_through_a_reward_only_vecnormalize(tmp_path: Path) -> None:
    (whole, resumed), _ = _stop_and_resume(
        lambda: RecurrentPPO(
            "MlpLstmPolicy",
            n_steps=32,
            batch_size=32,
            n_epochs=1,
            seed=3,
            policy_kwargs={"lstm_hidden_size": 8, "net_arch": [16]},
        ),
        tmp_path,
    )
    for (key, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), f"{key} differs after resume"
