"""Script for test_ranks.py: train an on-policy algorithm in 2 processes (Lightning re-runs this file for
rank 1) and save, per rank, the final parameters, the env-step count and the last rollout's observations.

    python tests/lit_sb3/algorithms/ddp_sync.py TRPO OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import lightning as L
import torch

import lit_sb3
from lit_sb3 import RLEnvDataModule, RLTrainer

SETTINGS = {  # tiny rollouts: a few updates, each rank its own episodes
    "TRPO": {"n_steps": 64, "batch_size": 64, "n_critic_updates": 3, "cg_max_steps": 5},
    "PPO": {"n_steps": 64, "batch_size": 32, "n_epochs": 2},
}


class InitialParameters(L.Callback):
    params: torch.Tensor | None = None

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.params = torch.nn.utils.parameters_to_vector(pl_module.parameters()).detach().clone()


def main() -> None:
    algo, out = sys.argv[1], Path(sys.argv[2])
    torch.set_num_threads(1)
    model = getattr(lit_sb3, algo)("MlpPolicy", seed=0, **SETTINGS[algo])
    trainer = RLTrainer(
        max_steps=512,
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        logger=False,
        enable_progress_bar=False,
        callbacks=[initial := InitialParameters()],
    )
    trainer.fit(model, datamodule=RLEnvDataModule(train_env="CartPole-v1", n_envs=2, seed=0))
    params = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    observations = torch.as_tensor(model.rollout_buffer.observations)
    torch.save(
        {
            "params": params,
            "initial": initial.params,
            "num_timesteps": model.num_timesteps,
            "observations": observations,
            "rollouts": model._loop.iteration,
        },
        out / f"rank{trainer.global_rank}.pt",
    )


if __name__ == "__main__":
    main()
