"""Hindsight Experience Replay: SB3's buffer, checked up front so a non-goal env fails with one clear line."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.her.goal_selection_strategy import GoalSelectionStrategy
from stable_baselines3.her.her_replay_buffer import HerReplayBuffer as _SB3HerReplayBuffer

GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


class HerReplayBuffer(_SB3HerReplayBuffer):
    """Hindsight Experience Replay (HER) buffer.

    Paper: https://arxiv.org/abs/1707.01495. Stored transitions are relabelled at sampling time with goals achieved
    later in the same episode (``goal_selection_strategy``), rewards recomputed by the env's ``compute_reward``.
    The sampling is SB3's; this subclass validates its arguments before any memory is allocated.

    :param buffer_size: capacity (transitions per env)
    :param observation_space: the goal env's Dict observation space
    :param action_space: action space
    :param env: the training VecEnv (its ``compute_reward`` relabels rewards)
    :param device: where sampled batches go
    :param n_envs: number of parallel envs
    :param optimize_memory_usage: not supported by HER (must be False)
    :param handle_timeout_termination: treat time-limit ends as non-terminal
    :param n_sampled_goal: relabelled transitions per real one
    :param goal_selection_strategy: 'future', 'final' or 'episode'
    :param copy_info_dict: pass copies of the info dicts to ``compute_reward`` (slower)
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Dict,
        action_space: spaces.Space[Any],
        env: VecEnv,
        device: torch.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        n_sampled_goal: int = 4,
        goal_selection_strategy: GoalSelectionStrategy | str = "future",
        copy_info_dict: bool = False,
    ) -> None:
        keys = set(observation_space.spaces) if isinstance(observation_space, spaces.Dict) else set()
        if not set(GOAL_KEYS) <= keys:
            raise ValueError(
                f"observation_space: HerReplayBuffer needs a goal env's Dict space with keys {', '.join(GOAL_KEYS)}, "
                f"got {observation_space}"
            )
        if isinstance(goal_selection_strategy, str):
            choices = [s.name.lower() for s in GoalSelectionStrategy]
            if goal_selection_strategy.lower() not in choices:
                raise ValueError(
                    f"goal_selection_strategy: must be one of {', '.join(choices)}, got {goal_selection_strategy!r}"
                )
        if n_sampled_goal < 0:
            raise ValueError(f"n_sampled_goal: must be >= 0, got {n_sampled_goal}")
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            env,
            device=device,
            n_envs=n_envs,
            optimize_memory_usage=optimize_memory_usage,
            handle_timeout_termination=handle_timeout_termination,
            n_sampled_goal=n_sampled_goal,
            goal_selection_strategy=goal_selection_strategy,
            copy_info_dict=copy_info_dict,
        )
