"""Train with periodic deterministic evaluation, stopping as soon as the reward threshold is reached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from lit_sb3.common.envs import EVAL_SEED_OFFSET


def best_eval_reward(
    algo: type,
    env_id: str | Callable[[], gym.Env],
    *,
    budget: int,
    threshold: float,
    seed: int,
    n_envs: int = 1,
    eval_every: int = 5_000,
    n_eval_episodes: int = 10,
    policy: str = "MlpPolicy",
    wrapper_class: Callable[[gym.Env], gym.Env] | None = None,
    normalize: bool = False,
    evaluator_class: type[EvalCallback] = EvalCallback,
    **hyperparameters: Any,
) -> float:
    """Best mean return of ``n_eval_episodes`` deterministic episodes, evaluated every ``eval_every`` env steps.

    ``env_id`` may be a factory; ``normalize`` wraps both envs in VecNormalize (the evaluation env uses the
    training statistics and raw rewards, as the RL Zoo does); ``evaluator_class`` e.g. sb3-contrib's masked one.
    """
    train_env = make_vec_env(env_id, n_envs=n_envs, seed=seed, wrapper_class=wrapper_class)
    eval_env = make_vec_env(env_id, n_envs=1, seed=seed + EVAL_SEED_OFFSET, wrapper_class=wrapper_class)
    if normalize:
        train_env = VecNormalize(train_env)
        eval_env = VecNormalize(eval_env, training=False, norm_reward=False)
    evaluator = evaluator_class(
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
