"""Stable-Baselines3 algorithms as PyTorch Lightning modules."""

import torch as _torch
from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule, LinearSchedule

from lit_sb3.algorithms.a2c import A2C
from lit_sb3.algorithms.ars import ARS
from lit_sb3.algorithms.crossq import CrossQ
from lit_sb3.algorithms.ddpg import DDPG
from lit_sb3.algorithms.dqn import DQN
from lit_sb3.algorithms.ppo import PPO
from lit_sb3.algorithms.ppo_mask import MaskablePPO
from lit_sb3.algorithms.ppo_recurrent import RecurrentPPO
from lit_sb3.algorithms.qrdqn import QRDQN
from lit_sb3.algorithms.sac import SAC
from lit_sb3.algorithms.td3 import TD3
from lit_sb3.algorithms.tqc import TQC
from lit_sb3.algorithms.trpo import TRPO
from lit_sb3.common.her import HerReplayBuffer
from lit_sb3.common.optimizers import sb3_parity
from lit_sb3.datamodule import RLEnvDataModule
from lit_sb3.trainer import RLTrainer

__version__ = "0.1.0"

# SB3's schedules are plain data: let checkpoints holding them load with torch.load(weights_only=True).
_torch.serialization.add_safe_globals([ConstantSchedule, FloatSchedule, LinearSchedule])

__all__ = [
    "A2C", "ARS", "DDPG", "DQN", "PPO", "QRDQN", "SAC", "TD3", "TQC", "TRPO", "CrossQ", "HerReplayBuffer",
    "MaskablePPO", "RLEnvDataModule", "RLTrainer", "RecurrentPPO", "__version__", "sb3_parity",
]
