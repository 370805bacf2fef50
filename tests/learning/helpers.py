"""Train with periodic deterministic evaluation, stopping as soon as the reward threshold is reached."""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env


def best_eval_reward(
    algo: type,
    env_id: str,
    *,
    budget: int,
    threshold: float,
    seed: int,
    n_envs: int = 1,
    eval_every: int = 5_000,
    n_eval_episodes: int = 10,
    policy: str = "MlpPolicy",
    **hyperparameters: Any,
) -> float:
    """Best mean return of ``n_eval_episodes`` deterministic episodes, evaluated every ``eval_every`` env steps."""
    train_env = make_vec_env(env_id, n_envs=n_envs, seed=seed)
    eval_env = make_vec_env(env_id, n_envs=1, seed=seed + 1000)
    evaluator = EvalCallback(
        eval_env,
        eval_freq=max(eval_every // n_envs, 1),
        n_eval_episodes=n_eval_episodes,
        deterministic=True,
        callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=threshold),
        verbose=0,
    )
    model = algo(policy, env=train_env, seed=seed, device="cpu", **hyperparameters)
    model.learn(budget, callback=evaluator)
    train_env.close()
    eval_env.close()
    return float(evaluator.best_mean_reward)
