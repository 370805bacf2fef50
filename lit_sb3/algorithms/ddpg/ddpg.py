"""Deep Deterministic Policy Gradient: TD3 with one critic, no policy delay and no target smoothing."""

from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.td3.policies import TD3Policy

from lit_sb3.algorithms.td3.td3 import TD3
from lit_sb3.common.learn import learn_method
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form


class DDPG(TD3):
    """Deep Deterministic Policy Gradient (DDPG).

    Papers: http://proceedings.mlr.press/v32/silver14.pdf, https://arxiv.org/abs/1509.02971. Treated as the special
    case of TD3 with ``policy_delay=1``, no target policy smoothing and a single critic (unless ``policy_kwargs``
    asks for ``n_critics``). Arguments and defaults are SB3's.

    :param policy: the policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy or a class)
    :param learning_rate: learning rate of both optimizers (constant or schedule of the progress remaining)
    :param buffer_size: replay buffer capacity (transitions per env)
    :param learning_starts: env steps of uniformly random actions before the first update
    :param batch_size: minibatch size of each update
    :param tau: Polyak coefficient of the target networks
    :param gamma: discount factor
    :param train_freq: update every n env steps, or ``(n, "step" | "episode")``
    :param gradient_steps: updates after each collection (-1: as many as env steps collected)
    :param action_noise: exploration noise on the (scaled) actions
    :param replay_buffer_class: replay buffer class (None: chosen from the observation space and ``n_steps``)
    :param replay_buffer_kwargs: extra replay buffer arguments
    :param optimize_memory_usage: memory-efficient replay buffer
    :param n_steps: n-step returns (NStepReplayBuffer) when > 1
    :param policy_kwargs: extra policy constructor arguments
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[TD3Policy],
        learning_rate: float | Schedule = 1e-3,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        tau: float = 0.005,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        action_noise: ActionNoise | None = None,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: torch.device | str = "auto",
        _init_setup_model: bool = True,
        *,
        env: GymEnv | str | None = None,
        tensorboard_log: str | None = None,
    ) -> None:
        super().__init__(
            policy,
            learning_rate=learning_rate,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            batch_size=batch_size,
            tau=tau,
            gamma=gamma,
            train_freq=train_freq,
            gradient_steps=gradient_steps,
            action_noise=action_noise,
            replay_buffer_class=replay_buffer_class,
            replay_buffer_kwargs=replay_buffer_kwargs,
            optimize_memory_usage=optimize_memory_usage,
            n_steps=n_steps,
            policy_delay=1,
            target_policy_noise=0.1,
            target_noise_clip=0.0,
            policy_kwargs={"n_critics": 1, **(policy_kwargs or {})},
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=_init_setup_model,
            env=env,
            tensorboard_log=tensorboard_log,
        )

    learn = learn_method("DDPG", log_every_n_steps=4)
