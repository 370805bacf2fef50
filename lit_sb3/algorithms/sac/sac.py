"""Soft Actor-Critic as a LightningModule."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.sac.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, SACPolicy

from lit_sb3.common import losses
from lit_sb3.common.entropy import EntropyTemperature, policy_sample
from lit_sb3.common.learn import learn_method
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.off_policy_args import check_target_update_interval
from lit_sb3.common.optim import critic_only_params, frozen
from lit_sb3.common.sb3_bridge import PolicyNetwork
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form
from lit_sb3.common.targets import TargetNetworks

# the policies are SB3's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}


class SAC(OffPolicyAlgorithm):
    """Soft Actor-Critic (SAC).

    Off-policy maximum-entropy actor-critic with twin critics and a learned (or fixed) temperature.
    Paper: https://arxiv.org/abs/1801.01290. Arguments and defaults are SB3's.

    :param policy: the policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy or a class)
    :param learning_rate: learning rate of every optimizer (constant or schedule of the progress remaining)
    :param buffer_size: replay buffer capacity (transitions per env)
    :param learning_starts: env steps of uniformly random actions before the first update
    :param batch_size: minibatch size of each update
    :param tau: Polyak coefficient of the target critics
    :param gamma: discount factor
    :param train_freq: update every n env steps, or ``(n, "step" | "episode")``
    :param gradient_steps: updates after each collection (-1: as many as env steps collected)
    :param action_noise: extra exploration noise on the (scaled) actions
    :param replay_buffer_class: replay buffer class (None: chosen from the observation space and ``n_steps``)
    :param replay_buffer_kwargs: extra replay buffer arguments
    :param optimize_memory_usage: memory-efficient replay buffer (next observations not stored twice)
    :param n_steps: n-step returns (NStepReplayBuffer) when > 1
    :param ent_coef: entropy coefficient; ``"auto"`` learns it (``"auto_0.1"``: from 0.1)
    :param target_update_interval: update the target critics every n gradient steps
    :param target_entropy: entropy the learned temperature aims at (``"auto"``: -dim(action space))
    :param use_sde: generalized state-dependent exploration instead of Gaussian noise
    :param sde_sample_freq: resample the gSDE noise every n steps (-1: once per collection)
    :param use_sde_at_warmup: act with gSDE instead of uniform random actions before learning starts
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[SACPolicy]]] = POLICY_ALIASES
    policy: SACPolicy  # None until the networks are built (as SB3 declares it)
    # SB3's names of the policy's networks
    actor, critic, critic_target = (PolicyNetwork(), PolicyNetwork(), PolicyNetwork())
    supported_action_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = (spaces.Box,)
    ent_coef, log_ent_coef, ent_coef_optimizer, target_entropy, ent_coef_tensor = EntropyTemperature.sb3_attributes(
        "temperature"
    )  # ent_coef_tensor: the fixed temperature (SB3 has none when it is learned)

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[SACPolicy],
        learning_rate: float | Schedule = 3e-4,
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
        ent_coef: str | float = "auto",
        target_update_interval: int = 1,
        target_entropy: str | float = "auto",
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        use_sde_at_warmup: bool = False,
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
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            use_sde_at_warmup=use_sde_at_warmup,
        )
        self.target_update_interval = check_target_update_interval(target_update_interval)
        self.temperature = EntropyTemperature(ent_coef, target_entropy, self.lr_schedule(1))
        self._finish_init(_init_setup_model, tensorboard_log)

    def _build_extra(self) -> None:
        self.target_networks = TargetNetworks((self.policy.critic, self.policy.critic_target))
        self._critic_weights = critic_only_params(self.policy)  # frozen while the actor loss reads the critics

    def gradient_updates(self, gradient_steps: int, batch_size: int) -> None:
        """Temperature, critic and actor updates on ``gradient_steps`` replay samples."""
        actor_opt, critic_opt = self._lightning_optimizers()[:2]
        actor, critic, critic_target = self.policy.actor, self.policy.critic, self.policy.critic_target
        for step in range(gradient_steps):
            data, discounts = self._replay_batch(batch_size)
            actions_pi, log_prob = policy_sample(actor, data.observations, fresh_noise=self.use_sde)
            ent_coef = self.temperature.step(log_prob, self._metrics)

            with torch.no_grad():
                next_actions, next_log_prob = actor.action_log_prob(data.next_observations)
                next_q = torch.cat(critic_target(data.next_observations, next_actions), dim=1)
                target_q = self.critic_target_values(data, discounts, next_q, next_log_prob, ent_coef)
            critic_loss = 0.5 * losses.critics_mse_loss(critic(data.observations, data.actions), target_q)
            self._optimizer_step(critic_opt, critic_loss)

            with frozen(self._critic_weights):
                q_pi = torch.cat(critic(data.observations, actions_pi), dim=1)
                actor_loss = losses.sac_actor_loss(log_prob, q_pi, ent_coef)
                self._optimizer_step(actor_opt, actor_loss)

            if step % self.target_update_interval == 0:
                self.target_networks.update(self.tau)
            self._track(actor_loss=actor_loss, critic_loss=critic_loss, ent_coef=ent_coef)
        self._n_updates += gradient_steps

    def critic_target_values(
        self,
        data: Any,
        discounts: torch.Tensor | float,
        next_q: torch.Tensor,
        next_log_prob: torch.Tensor,
        ent_coef: torch.Tensor,
    ) -> torch.Tensor:
        """The critics' regression target from the target critics' next-state values ``[batch, n_critics]``: SAC's
        clipped double-Q soft target (a research variant overrides this one step)."""
        return losses.clipped_double_q_target(data.rewards, data.dones, discounts, next_q, next_log_prob, ent_coef)

    learn = learn_method("SAC", log_every_n_steps=4)
