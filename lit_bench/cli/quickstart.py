"""Main job on defaults: PPO with the RL Zoo's CartPole-v1 hyperparameters, then a deterministic evaluation.

lit-bench quickstart [--budget 100000] [--seed 0] [--out results/runs/quickstart]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from stable_baselines3.common.utils import LinearSchedule

from lit_bench.store.format import METRICS_CSV
from lit_sb3 import PPO, RLEnvDataModule, RLTrainer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lit-bench quickstart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=100_000, help="env steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results/runs/quickstart"))
    args = parser.parse_args(argv)

    # rl-baselines3-zoo hyperparams/ppo.yml, CartPole-v1
    model = PPO(
        "MlpPolicy",
        n_steps=32,
        batch_size=256,
        gae_lambda=0.8,
        gamma=0.98,
        n_epochs=20,
        ent_coef=0.0,
        learning_rate=LinearSchedule(1e-3, 0.0, 1.0),
        clip_range=LinearSchedule(0.2, 0.0, 1.0),
        seed=args.seed,
    )
    data = RLEnvDataModule(train_env="CartPole-v1", n_envs=8, seed=args.seed, n_eval_episodes=20)
    trainer = RLTrainer(max_steps=args.budget, default_root_dir=args.out, run_name="ppo_cartpole")
    trainer.fit(model, datamodule=data)
    result = trainer.validate(model, datamodule=data, verbose=False)[0]
    assert trainer.logger is not None  # RLTrainer's default CSV logger
    metrics = Path(trainer.logger.log_dir or ".") / Path(METRICS_CSV).name  # CSVLogger's file, as in a run's train/
    print(
        f"PPO CartPole-v1 after {model.num_timesteps} env steps: deterministic evaluation over "
        f"{data.n_eval_episodes} episodes = {result['eval/mean_reward']:.1f} +/- {result['eval/std_reward']:.1f} "
        f"(solved at 475)\ntraining metrics: {metrics}"
    )


if __name__ == "__main__":
    main()
