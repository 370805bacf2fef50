"""Advantage Actor Critic (A2C) as a LightningModule."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from gymnasium import spaces
from stable_baselines3.a2c.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule

from lit_sb3.common import losses
from lit_sb3.common.learn import learn_method
from lit_sb3.common.on_policy import OnPolicyAlgorithm
from lit_sb3.common.optimizers import with_fused_default
from lit_sb3.common.sb3_calls import accepts_sb3_constructor_form
from lit_sb3.common.utils import unchecked_distributions

# the policies are SB3's; the names the constructor's ``policy`` accepts
POLICY_ALIASES = {"MlpPolicy": MlpPolicy, "CnnPolicy": CnnPolicy, "MultiInputPolicy": MultiInputPolicy}


class A2C(OnPolicyAlgorithm):
    """Advantage Actor Critic (A2C): one gradient step on each whole rollout.

    Paper: https://arxiv.org/abs/1602.01783. Arguments and defaults are SB3's (RMSprop, ``n_steps=5``).

    :param policy: the policy model to use (MlpPolicy, CnnPolicy, MultiInputPolicy or a class)
    :param learning_rate: constant or schedule of the progress remaining (1 -> 0)
    :param n_steps: steps per env per update
    :param gamma: discount factor
    :param gae_lambda: GAE factor (1.0: classic advantage)
    :param ent_coef: entropy coefficient
    :param vf_coef: value-loss coefficient
    :param max_grad_norm: gradient-norm clipping
    :param rms_prop_eps: RMSprop epsilon
    :param use_rms_prop: RMSprop (default) or Adam
    :param use_sde: generalized state-dependent exploration
    :param sde_sample_freq: resample the gSDE noise every n steps (-1: once per rollout)
    :param rollout_buffer_class: rollout buffer class (None: chosen from the observation space)
    :param rollout_buffer_kwargs: extra rollout buffer arguments
    :param normalize_advantage: normalize the advantages
    :param stats_window_size: episodes averaged in the rollout statistics
    :param policy_kwargs: extra policy constructor arguments
    :param verbose: 0 silent, 1 SB3's metric table
    :param seed: random seed
    :param device: device outside a trainer
    :param _init_setup_model: build the networks at once when ``env`` is given
    :param env: SB3-style: train on this env in ``learn``
    """

    policy_aliases: ClassVar[dict[str, type[ActorCriticPolicy]]] = POLICY_ALIASES
    policy: ActorCriticPolicy  # None until the networks are built (as SB3 declares it)
    default_log_interval: ClassVar[int] = 100

    @accepts_sb3_constructor_form
    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        learning_rate: float | Schedule = 7e-4,
        n_steps: int = 5,
        gamma: float = 0.99,
        gae_lambda: float = 1.0,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        rms_prop_eps: float = 1e-5,
        use_rms_prop: bool = True,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        rollout_buffer_class: type[RolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        normalize_advantage: bool = False,
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
            n_steps=n_steps,
            gamma=gamma,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            max_grad_norm=max_grad_norm,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            rollout_buffer_class=rollout_buffer_class,
            rollout_buffer_kwargs=rollout_buffer_kwargs,
            stats_window_size=stats_window_size,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            env=env,
            batch_size=None,  # the whole rollout is one batch
            n_epochs=1,
            normalize_advantage=normalize_advantage,
        )
        self.rms_prop_eps = rms_prop_eps
        self.use_rms_prop = use_rms_prop
        self._finish_init(_init_setup_model, tensorboard_log)

    def _policy_kwargs(self) -> dict[str, Any]:
        kwargs = super()._policy_kwargs()
        if self.use_rms_prop and "optimizer_class" not in kwargs:
            kwargs["optimizer_class"] = torch.optim.RMSprop
            # SB3's settings replace any optimizer_kwargs given; the step runs multi-tensor (same parameters)
            settings = {"alpha": 0.99, "eps": self.rms_prop_eps, "weight_decay": 0}
            kwargs["optimizer_kwargs"] = with_fused_default(torch.optim.RMSprop, settings)
        return kwargs

    def compute_loss(self, batch: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """A2C's loss on one batch with the current policy, and its logged parts."""
        actions = batch.actions
        if isinstance(self.action_space, spaces.Discrete):
            actions = actions.long().flatten()
        with unchecked_distributions():
            values, log_prob, entropy = self.policy.evaluate_actions(batch.observations, actions)
        return a2c_loss(
            values.flatten(),
            log_prob,
            entropy,
            batch,
            normalize_advantage=self.normalize_advantage,
            ent_coef=self.ent_coef,
            vf_coef=self.vf_coef,
        )

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        """A2C loss on the full rollout buffer (single gradient step)."""
        loss, terms = self.compute_loss(batch)
        (optimizer,) = self._lightning_optimizers()
        self._optimizer_step(optimizer, loss, self.max_grad_norm)
        self._track(**terms)
        return loss.detach()

    def on_train_epoch_end(self) -> None:
        if self._loop.collected:
            self._n_updates += 1
        super().on_train_epoch_end()

    learn = learn_method("A2C", log_every_n_steps=100)


def a2c_loss(
    values: torch.Tensor,
    log_prob: torch.Tensor,
    entropy: torch.Tensor | None,
    batch: Any,
    *,
    normalize_advantage: bool,
    ent_coef: float,
    vf_coef: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """A2C's total loss on one batch and its parts, named as SB3 logs them (``train/<name>``)."""
    advantages = losses.normalize_advantages(batch.advantages) if normalize_advantage else batch.advantages
    pg_loss = losses.policy_gradient_loss(advantages, log_prob)
    v_loss = losses.value_loss(values, batch.returns)
    ent_loss = losses.entropy_loss(entropy, log_prob)
    loss = pg_loss + ent_coef * ent_loss + vf_coef * v_loss
    return loss, {"policy_loss": pg_loss, "value_loss": v_loss, "entropy_loss": ent_loss}
