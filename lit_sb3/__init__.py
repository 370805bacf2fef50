"""Stable-Baselines3 algorithms as PyTorch Lightning modules."""

from lit_sb3.algorithms.a2c import A2C
from lit_sb3.algorithms.ppo import PPO
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.trainer import RLTrainer

__version__ = "0.1.0"

__all__ = ["A2C", "PPO", "RLEnvDataModule", "RLTrainer", "__version__"]
