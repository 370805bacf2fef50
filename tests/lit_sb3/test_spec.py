"""The public API as the spec fixes it: every spec'd signature (``spec.SIGNATURES``); paths, bases and members of PPO,
A2C, RLTrainer and RLEnvDataModule."""

from __future__ import annotations

import inspect

import lightning as L
import pytest

import lit_sb3
from lit_sb3.common.base import BaseAlgorithm
from lit_sb3.common.on_policy import OnPolicyAlgorithm
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.trainer import RLTrainer
from tests.lit_sb3.spec import SIGNATURES, signature_problems


@pytest.mark.parametrize(
    ("owner", "attribute", "spec"),
    SIGNATURES,
    ids=[f"{owner.__name__}.{attribute}" for owner, attribute, _ in SIGNATURES],
)
def test_signature_matches_spec(owner, attribute, spec):
    assert signature_problems(getattr(owner, attribute), spec) == []


@pytest.mark.parametrize(
    ("cls", "base"),
    [
        (lit_sb3.PPO, OnPolicyAlgorithm),
        (lit_sb3.A2C, OnPolicyAlgorithm),
        (RLTrainer, L.Trainer),
        (RLEnvDataModule, L.LightningDataModule),
        (OnPolicyAlgorithm, BaseAlgorithm),
        (BaseAlgorithm, L.LightningModule),
    ],
)
def test_bases(cls, base):
    assert issubclass(cls, base)


def test_module_paths_and_members():
    assert lit_sb3.RLTrainer is RLTrainer and lit_sb3.RLEnvDataModule is RLEnvDataModule
    for cls in (lit_sb3.PPO, lit_sb3.A2C):
        # Lightning declares these hooks too: the spec'd behaviour needs lit_sb3's own implementations
        for method in ("configure_optimizers", "on_train_epoch_start", "training_step", "on_train_epoch_end", "learn"):
            assert _defined_in_lit_sb3(cls, method), method
        assert isinstance(inspect.getattr_static(cls, "env"), property)
    for prop in ("rl_total_timesteps", "rl_num_timesteps", "rl_budget_reached", "rl_progress"):
        assert isinstance(inspect.getattr_static(RLTrainer, prop), property), prop
    assert isinstance(inspect.getattr_static(RLEnvDataModule, "load_from_checkpoint"), classmethod)
    for method in (
        "train_dataloader",
        "val_dataloader",
        "test_dataloader",
        "predict_dataloader",
        "state_dict",
        "close",
    ):
        assert _defined_in_lit_sb3(RLEnvDataModule, method), method


def _defined_in_lit_sb3(cls: type, name: str) -> bool:
    """``cls.name`` is implemented by lit_sb3, not inherited from Lightning."""
    return getattr(getattr(cls, name), "__module__", "").startswith("lit_sb3.")
