"""The public API of PPO, A2C, RLTrainer and RLEnvDataModule as the spec fixes it (paths, bases, signatures)."""

from __future__ import annotations

import inspect

import lightning as L
import pytest

import lit_sb3
from lit_sb3.common.base import BaseAlgorithm
from lit_sb3.common.on_policy import OnPolicyAlgorithm
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.trainer import RLTrainer

from .spec_helpers import signature_problems

LEARN = (
    "total_timesteps, env=None, callback=None, log_every_n_steps={log}, tb_log_name={name!r}, "
    "reset_num_timesteps=True, progress_bar=False, default_root_dir=None"
)

PPO_INIT = (
    "policy, learning_rate=0.0003, n_steps=2048, batch_size=64, n_epochs=10, gamma=0.99, gae_lambda=0.95, "
    "clip_range=0.2, clip_range_vf=None, normalize_advantage=True, ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, "
    "use_sde=False, sde_sample_freq=-1, rollout_buffer_class=None, rollout_buffer_kwargs=None, target_kl=None, "
    "stats_window_size=100, policy_kwargs=None, verbose=0, seed=None, device='auto', _init_setup_model=True"
)
A2C_INIT = (
    "policy, learning_rate=0.0007, n_steps=5, gamma=0.99, gae_lambda=1.0, ent_coef=0.0, vf_coef=0.5, "
    "max_grad_norm=0.5, rms_prop_eps=1e-05, use_rms_prop=True, use_sde=False, sde_sample_freq=-1, "
    "rollout_buffer_class=None, rollout_buffer_kwargs=None, normalize_advantage=False, stats_window_size=100, "
    "policy_kwargs=None, verbose=0, seed=None, device='auto', _init_setup_model=True"
)
DATAMODULE_INIT = "train_env=None, val_env=None, test_env=None, predict_env=None, monitor_wrapper=True, verbose=0"

CASES = [
    (lit_sb3.PPO.__init__, PPO_INIT),
    (lit_sb3.PPO.learn, LEARN.format(log=1, name="PPO")),
    (lit_sb3.PPO.training_step, "batch, batch_idx"),
    (lit_sb3.A2C.__init__, A2C_INIT),
    (lit_sb3.A2C.learn, LEARN.format(log=100, name="A2C")),
    (lit_sb3.A2C.training_step, "batch, batch_idx"),
    (RLEnvDataModule.__init__, DATAMODULE_INIT),
    (RLEnvDataModule.setup, "stage=None"),
    (RLEnvDataModule.teardown, "stage=None"),
    (RLEnvDataModule.on_exception, "exception"),
    (RLEnvDataModule.get_env, "stage, *, resolve=True"),
    (RLEnvDataModule.load_state_dict, "state_dict"),
    (RLEnvDataModule.load_from_checkpoint, "checkpoint_path, map_location=None, hparams_file=None, weights_only=None"),
    (RLTrainer.__init__, "max_steps=None, rl_callback=None, run_name=None"),
    (RLTrainer.fit, "model, *, datamodule=None, train_dataloaders=None, val_dataloaders=None, ckpt_path=None, "
                    "weights_only=None"),
]


@pytest.mark.parametrize(("func", "spec"), CASES, ids=[f.__qualname__ for f, _ in CASES])
def test_signature_matches_spec(func, spec):
    assert signature_problems(func, spec) == []


@pytest.mark.parametrize(
    ("cls", "base"),
    [(lit_sb3.PPO, OnPolicyAlgorithm), (lit_sb3.A2C, OnPolicyAlgorithm), (RLTrainer, L.Trainer),
     (RLEnvDataModule, L.LightningDataModule), (OnPolicyAlgorithm, BaseAlgorithm), (BaseAlgorithm, L.LightningModule)],
)
def test_bases(cls, base):
    assert issubclass(cls, base)


def test_module_paths_and_members():
    assert lit_sb3.RLTrainer is RLTrainer and lit_sb3.RLEnvDataModule is RLEnvDataModule
    for cls in (lit_sb3.PPO, lit_sb3.A2C):
        for method in ("configure_optimizers", "on_train_epoch_start", "training_step", "on_train_epoch_end", "learn"):
            assert callable(getattr(cls, method)), method
        assert isinstance(inspect.getattr_static(cls, "env"), property)
    for prop in ("rl_total_timesteps", "rl_num_timesteps", "rl_budget_reached", "rl_progress"):
        assert isinstance(inspect.getattr_static(RLTrainer, prop), property), prop
    assert isinstance(inspect.getattr_static(RLEnvDataModule, "load_from_checkpoint"), classmethod)
    for method in ("train_dataloader", "val_dataloader", "test_dataloader", "predict_dataloader", "state_dict",
                   "close"):
        assert callable(getattr(RLEnvDataModule, method)), method
