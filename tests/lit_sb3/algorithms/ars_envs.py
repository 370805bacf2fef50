"""Env factories for ARS's AsyncEval workers: a module of its own, so a worker process imports only SB3."""

from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize


def normalized_cartpole() -> VecNormalize:
    """CartPole with observation normalization, as the RL Zoo's ARS settings use it."""
    return VecNormalize(make_vec_env("CartPole-v1"), norm_reward=False)
