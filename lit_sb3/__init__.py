"""Stable-Baselines3 algorithms as PyTorch Lightning modules.

The classes load on first use (PEP 562 ``__getattr__``): ``from lit_sb3 import PPO`` imports PPO's module only,
so a run of one algorithm does not import the other thirteen, and ``import lit_sb3`` alone imports neither torch
nor SB3 (a sweep's parent process reads the allow-list without them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
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
    from lit_sb3.seeds import SeedGroup
    from lit_sb3.trainer import RLTrainer

__version__ = "0.1.0"


_ALGORITHMS = {
    "A2C": "a2c",
    "ARS": "ars",
    "CrossQ": "crossq",
    "DDPG": "ddpg",
    "DQN": "dqn",
    "PPO": "ppo",
    "MaskablePPO": "ppo_mask",
    "RecurrentPPO": "ppo_recurrent",
    "QRDQN": "qrdqn",
    "SAC": "sac",
    "TD3": "td3",
    "TQC": "tqc",
    "TRPO": "trpo",
}
_MODULES = {
    **{name: f"lit_sb3.algorithms.{package}" for name, package in _ALGORITHMS.items()},
    "HerReplayBuffer": "lit_sb3.common.her",
    "sb3_parity": "lit_sb3.common.optimizers",
    "RLEnvDataModule": "lit_sb3.datamodule",
    "RLTrainer": "lit_sb3.trainer",
    "SeedGroup": "lit_sb3.seeds",
}

__all__ = [
    "A2C",
    "ARS",
    "DDPG",
    "DQN",
    "PPO",
    "QRDQN",
    "SAC",
    "TD3",
    "TQC",
    "TRPO",
    "CrossQ",
    "HerReplayBuffer",
    "MaskablePPO",
    "RLEnvDataModule",
    "RLTrainer",
    "RecurrentPPO",
    "SeedGroup",
    "__version__",
    "sb3_parity",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'lit_sb3' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
