"""PPO on CartPole with the RL Zoo's settings in N processes (``strategy="ddp"``, CPU/gloo): same global rollout.

    python benchmarks/ddp_ppo.py --devices 2 --steps 100000 --threshold 475

The Zoo's 8 envs x 32 steps and minibatches of 256 are split over the processes (8/N envs and minibatches of 256/N
each; DDP averages the gradients), so one update sees the same amount of data whatever N. Lightning re-runs this
script for every rank; rank 0 prints one JSON line: env steps, wall-clock seconds of training (from the start
of the training loop, all processes up), steps/s and the best evaluation.
"""

from __future__ import annotations

import argparse
import json
import time

import lightning as L
import torch
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.utils import LinearSchedule

from lit_sb3 import PPO, RLEnvDataModule, RLTrainer
from lit_sb3.common.seeding import EVAL_SEED_OFFSET

ZOO_ENVS, ZOO_BATCH = 8, 256


class TrainingClock(L.Callback):
    """Starts when every process has joined and training begins (process start-up and imports are not counted)."""

    start = 0.0

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.start = time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100_000, help="global env-step budget")
    parser.add_argument("--threshold", type=float, default=None, help="stop at this mean evaluation return")
    parser.add_argument("--eval-every", type=int, default=10_000, help="global env steps between evaluations")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n_envs, batch = ZOO_ENVS // args.devices, ZOO_BATCH // args.devices
    model = PPO(
        "MlpPolicy",
        n_steps=32,
        batch_size=batch,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=LinearSchedule(1e-3, 0.0, 1.0),
        clip_range=LinearSchedule(0.2, 0.0, 1.0),
        seed=args.seed,
    )
    evaluator = None
    if args.threshold is not None:  # every rank evaluates the same (synchronized) policy on the same episodes
        evaluator = EvalCallback(
            make_vec_env("CartPole-v1", seed=args.seed + EVAL_SEED_OFFSET),
            n_eval_episodes=10,
            eval_freq=max(args.eval_every // ZOO_ENVS, 1),
            verbose=0,
            callback_on_new_best=StopTrainingOnRewardThreshold(args.threshold),
        )
    trainer = RLTrainer(
        max_steps=args.steps,
        accelerator="cpu",
        devices=args.devices,
        strategy="ddp" if args.devices > 1 else "auto",
        rl_callback=evaluator,
        logger=False,
        enable_progress_bar=False,
        callbacks=[clock := TrainingClock()],
    )
    trainer.fit(model, datamodule=RLEnvDataModule(train_env="CartPole-v1", n_envs=n_envs, seed=args.seed))
    seconds = time.perf_counter() - clock.start
    if trainer.global_rank == 0:
        print(
            json.dumps(
                {
                    "devices": args.devices,
                    "env_steps": trainer.rl_num_timesteps,
                    "seconds": seconds,
                    "steps_per_s": trainer.rl_num_timesteps / seconds,
                    "best_mean_reward": evaluator.best_mean_reward if evaluator else None,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
