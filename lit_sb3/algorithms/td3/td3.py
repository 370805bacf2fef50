"""Twin Delayed DDPG as a LightningModule."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.td3.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, TD3Policy

from lit_sb3.common import losses
from lit_sb3.common.learn import learn_method
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.optim import critic_only_params, frozen
from lit_sb3.common.sb3_bridge import PolicyNetwork
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form
from lit_sb3.common.targets import TargetNetworks

# the policies are SB3's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}


class TD3(OffPolicyAlgorithm):
    """Twin Delayed DDPG (TD3).

    Deterministic actor, twin critics, delayed actor/target updates and target policy smoothing.
    Paper: https://arxiv.org/abs/1802.09477. Arguments and defaults are SB3's.

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
    :param policy_delay: critic updates per actor (and target) update
    :param target_policy_noise: std of the Gaussian smoothing noise on target actions
    :param target_noise_clip: absolute clip of that noise
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[TD3Policy]]] = POLICY_ALIASES
    policy: TD3Policy  # None until the networks are built (as SB3 declares it)
    # SB3's names of the policy's networks
    actor, actor_target, critic, critic_target = (PolicyNetwork(), PolicyNetwork(), PolicyNetwork(), PolicyNetwork())
    supported_action_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = (spaces.Box,)

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
        policy_delay: int = 2,
        target_policy_noise: float = 0.2,
        target_noise_clip: float = 0.5,
        stats_window_size: int = 100,
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
            learning_rate,
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
            policy_kwargs=policy_kwargs,
            stats_window_size=stats_window_size,
            verbose=verbose,
            seed=seed,
            device=device,
            env=env,
        )
        self.policy_delay = policy_delay
        self.target_policy_noise = target_policy_noise
        self.target_noise_clip = target_noise_clip
        self._finish_init(_init_setup_model, tensorboard_log)

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        checks = [
            ("policy_delay", self.policy_delay >= 1, ">= 1"),
            ("target_policy_noise", self.target_policy_noise >= 0, ">= 0"),
            ("target_noise_clip", self.target_noise_clip >= 0, ">= 0"),
        ]
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name}: must be {rule}, got {getattr(self, name)}")

    def _build_extra(self) -> None:
        policy = self.policy
        pairs = (policy.critic, policy.critic_target), (policy.actor, policy.actor_target)
        self.target_networks = TargetNetworks(*pairs)
        self._critic_weights = critic_only_params(policy)

    def gradient_updates(self, gradient_steps: int, batch_size: int) -> None:
        """Critic update every step; actor and target update every ``policy_delay`` steps."""
        actor_opt, critic_opt = self._lightning_optimizers()
        actor, actor_target = self.policy.actor, self.policy.actor_target
        critic, critic_target = self.policy.critic, self.policy.critic_target
        smoothing = self.target_policy_noise > 0 and self.target_noise_clip > 0
        for _ in range(gradient_steps):
            self._n_updates += 1
            data, discounts = self._replay_batch(batch_size)
            with torch.no_grad():
                next_actions = actor_target(data.next_observations)
                if smoothing:  # DDPG (no smoothing) skips drawing noise that would be clipped to zero
                    noise = torch.empty_like(data.actions).normal_(0.0, self.target_policy_noise)
                    next_actions = losses.smoothed_target_actions(next_actions, noise, self.target_noise_clip)
                next_q = torch.cat(critic_target(data.next_observations, next_actions), dim=1)
                target_q = losses.clipped_double_q_target(data.rewards, data.dones, discounts, next_q)
            critic_loss = losses.critics_mse_loss(critic(data.observations, data.actions), target_q)
            self._optimizer_step(critic_opt, critic_loss)
            self._track(critic_loss=critic_loss)

            if self._n_updates % self.policy_delay == 0:
                with frozen(self._critic_weights):
                    actor_loss = -critic.q1_forward(data.observations, actor(data.observations)).mean()
                    self._optimizer_step(actor_opt, actor_loss)
                self.target_networks.update(self.tau)
                self._track(actor_loss=actor_loss)

    learn = learn_method("TD3", log_every_n_steps=4)
