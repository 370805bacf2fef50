"""CrossQ (batch-normalized critics, no target network) as a LightningModule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from gymnasium import spaces
from sb3_contrib.common.torch_layers import BatchRenorm
from sb3_contrib.crossq.policies import CrossQPolicy, MlpPolicy
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.noise import ActionNoise
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from torch import nn

from lit_sb3.common import losses
from lit_sb3.common.entropy import EntropyTemperature
from lit_sb3.common.learn import learn_method
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from lit_sb3.common.optim import critic_only_params, frozen
from lit_sb3.common.sb3_bridge import PolicyNetwork
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form

# the policies are sb3-contrib's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy}


class CrossQ(OffPolicyAlgorithm):
    """CrossQ: SAC without target networks, made stable by batch (re)normalization in the critics.

    The critics see the current and the next state-action pairs in one joint batch, so their normalization
    statistics cover both distributions; the actor and the temperature are updated every ``policy_delay`` critic
    updates. Paper: https://openreview.net/forum?id=PczQtTsTIX. Arguments and defaults are sb3-contrib's.

    :param policy: the policy model to use (MlpPolicy or a class)
    :param learning_rate: learning rate of every optimizer (constant or schedule of the progress remaining)
    :param buffer_size: replay buffer capacity (transitions per env)
    :param learning_starts: env steps of uniformly random actions before the first update
    :param batch_size: minibatch size of each update
    :param gamma: discount factor
    :param train_freq: update every n env steps, or ``(n, "step" | "episode")``
    :param gradient_steps: updates after each collection (-1: as many as env steps collected)
    :param action_noise: extra exploration noise on the (scaled) actions
    :param replay_buffer_class: replay buffer class (None: chosen from the observation space and ``n_steps``)
    :param replay_buffer_kwargs: extra replay buffer arguments
    :param optimize_memory_usage: memory-efficient replay buffer (next observations not stored twice)
    :param n_steps: n-step returns (NStepReplayBuffer) when > 1
    :param ent_coef: entropy coefficient; ``"auto"`` learns it (``"auto_0.1"``: from 0.1)
    :param target_entropy: entropy the learned temperature aims at (``"auto"``: -dim(action space))
    :param policy_delay: critic updates per actor (and temperature) update
    :param use_sde: generalized state-dependent exploration instead of Gaussian noise
    :param sde_sample_freq: resample the gSDE noise every n steps (-1: once per collection)
    :param use_sde_at_warmup: act with gSDE instead of uniform random actions before learning starts
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments (``net_arch``, ``batch_norm_momentum``, ...)
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[CrossQPolicy]]] = POLICY_ALIASES
    policy: CrossQPolicy  # None until the networks are built (as SB3 declares it)
    actor, critic = PolicyNetwork(), PolicyNetwork()  # SB3's names of the policy's networks
    supported_action_spaces: ClassVar[tuple[type[spaces.Space[Any]], ...]] = (spaces.Box,)
    ent_coef, log_ent_coef, ent_coef_optimizer, target_entropy, ent_coef_tensor = EntropyTemperature.sb3_attributes(
        "temperature"
    )  # ent_coef_tensor: the fixed temperature (SB3 has none when it is learned)

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[CrossQPolicy],
        learning_rate: float | Schedule = 1e-3,
        buffer_size: int = 1_000_000,
        learning_starts: int = 100,
        batch_size: int = 256,
        gamma: float = 0.99,
        train_freq: int | tuple[int, str] = 1,
        gradient_steps: int = 1,
        action_noise: ActionNoise | None = None,
        replay_buffer_class: type[ReplayBuffer] | None = None,
        replay_buffer_kwargs: dict[str, Any] | None = None,
        optimize_memory_usage: bool = False,
        n_steps: int = 1,
        ent_coef: str | float = "auto",
        target_entropy: str | float = "auto",
        policy_delay: int = 3,
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
            tau=1.0,  # no target network
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
        self.policy_delay = policy_delay
        self.temperature = EntropyTemperature(ent_coef, target_entropy, self.lr_schedule(1))
        self._finish_init(_init_setup_model, tensorboard_log)

    def _validate_hyperparameters(self) -> None:
        super()._validate_hyperparameters()
        delay = self.policy_delay
        if not isinstance(delay, int) or isinstance(delay, bool) or delay < 1:
            raise ValueError(f"policy_delay: must be an int >= 1, got {delay!r}")

    def _default_optimizer_kwargs(self, optimizer_class: type[torch.optim.Optimizer]) -> dict[str, Any]:
        if optimizer_class in (torch.optim.Adam, torch.optim.AdamW):
            return {"betas": (0.5, 0.999)}  # sb3-contrib's CrossQ default (the paper's beta1 = 0.5)
        return super()._default_optimizer_kwargs(optimizer_class)

    def _build_extra(self) -> None:
        self._critic_weights = critic_only_params(self.policy)  # frozen while the actor loss reads the critics
        # the normalization layers whose mode decides between batch statistics (train) and running statistics (eval)
        self._actor_norms = [m for m in self.policy.actor.modules() if isinstance(m, BatchRenorm)]
        self._critic_norms = [m for m in self.policy.critic.modules() if isinstance(m, BatchRenorm)]

    def gradient_updates(self, gradient_steps: int, batch_size: int) -> None:
        """Critic update every step (joint current/next batch); actor and temperature every ``policy_delay`` steps.

        Normalization modes, as sb3-contrib sets them: the next actions come from the actor in eval mode (running
        statistics, left unchanged); the joint critic pass is in train mode (batch statistics, running statistics
        updated); the policy's own actions are drawn in train mode; the actor loss reads the critics in eval mode.
        """
        actor_opt, critic_opt = self._lightning_optimizers()[:2]
        actor, critic = self.policy.actor, self.policy.critic
        for _ in range(gradient_steps):
            self._n_updates += 1
            data, discounts = self._replay_batch(batch_size)
            if self.use_sde:
                actor.reset_noise()
            ent_coef = self.temperature.value()

            with torch.no_grad():
                _set_norm_mode(self._actor_norms, False)
                next_actions, next_log_prob = actor.action_log_prob(data.next_observations)

            _set_norm_mode(self._critic_norms, True)
            joint_q = torch.cat(
                critic(torch.cat([data.observations, data.next_observations]), torch.cat([data.actions, next_actions])),
                dim=1,
            )
            _set_norm_mode(self._critic_norms, False)
            current_q, next_q = joint_q.split(batch_size)
            with torch.no_grad():
                target_q = losses.clipped_double_q_target(
                    data.rewards, data.dones, discounts, next_q, next_log_prob, ent_coef
                )
            critic_loss = 0.5 * losses.critics_mse_loss(current_q.split(1, dim=1), target_q)
            self._optimizer_step(critic_opt, critic_loss)
            self._track(critic_loss=critic_loss, ent_coef=ent_coef)

            if self._n_updates % self.policy_delay == 0:
                _set_norm_mode(self._actor_norms, True)
                actions_pi, log_prob = actor.action_log_prob(data.observations)
                _set_norm_mode(self._actor_norms, False)
                log_prob = log_prob.reshape(-1, 1)
                self.temperature.step(log_prob, self._metrics)
                with frozen(self._critic_weights):
                    q_pi = torch.cat(critic(data.observations, actions_pi), dim=1)
                    actor_loss = losses.sac_actor_loss(log_prob, q_pi, ent_coef)
                    self._optimizer_step(actor_opt, actor_loss)
                self._track(actor_loss=actor_loss)

    learn = learn_method("CrossQ", log_every_n_steps=4)


def _set_norm_mode(norms: Sequence[nn.Module], training: bool) -> None:
    """Batch statistics (and running-statistics updates) when ``training``, running statistics otherwise."""
    for module in norms:
        module.training = training
